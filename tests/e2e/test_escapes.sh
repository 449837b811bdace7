#!/usr/bin/env bash
# scripts/escapes against wavebox alone: every attempt must be blocked.
set -u
src=${WAVEBOX_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
out=$(ESCAPES_WAVEBOX_ONLY=1 WAVEBOX_BIN="${WAVEBOX:?}" bash "$src/scripts/escapes" 2>&1)
rc=$?
echo "$out"
n=$(grep -c "blocked" <<<"$out")
[ "$rc" -eq 0 ] && echo "$n passed, 0 failed" || echo "$n passed, $(grep -c ESCAPED <<<"$out") failed"
exit $rc
