#!/usr/bin/env bash
# wavebox serve for agent hosts: signals, the effective policy, doctor, warnings to the client
# (tests/serve/test_serve_host.py).
set -u
WAVEBOX=${WAVEBOX:?set WAVEBOX to the built binary}
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
exec timeout 280 python3 "$(dirname "$0")/../serve/test_serve_host.py"
