#!/usr/bin/env bash
# wavebox serve's sandboxes prepared ahead: used when nothing changed, never weaker (tests/serve/).
set -u
WAVEBOX=${WAVEBOX:?set WAVEBOX to the built binary}
command -v python3 >/dev/null || { echo "python3 missing"; exit 77; }
command -v git >/dev/null || { echo "git missing"; exit 77; }
# Every kept plan is also made afresh and compared (a difference ends the server).
export WAVEBOX_PLAN_CACHE_CHECK=1
exec timeout 200 python3 "$(dirname "$0")/../serve/test_standby.py"
