#!/usr/bin/env bash
# wavebox serve's kept plans: used while nothing they read changed, never once something did
# (tests/serve/).
set -u
WAVEBOX=${WAVEBOX:?set WAVEBOX to the built binary}
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
command -v git >/dev/null || { echo "git missing"; exit 77; }
exec timeout 300 python3 "$(dirname "$0")/../serve/test_plan_cache.py"
