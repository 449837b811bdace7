# Shared helpers for the end-to-end tests: each test gets a scratch HOME and workspace, runs the
# real wavebox binary in real bubblewrap, and checks the host afterwards.
set -u
WAVEBOX=${WAVEBOX:?set WAVEBOX to the built binary}
FAILS=0
CHECKS=0
SCRATCH=$(mktemp -d "${TMPDIR:-/tmp}/wavebox-e2e.XXXXXX")
export HOME="$SCRATCH/home"
WS="$SCRATCH/home/proj"
mkdir -p "$HOME" "$WS"
cleanup() { chmod -R u+rwx "$SCRATCH" 2>/dev/null; rm -rf "$SCRATCH"; }
trap cleanup EXIT

pass() { CHECKS=$((CHECKS+1)); echo "ok: $*"; }
fail() { CHECKS=$((CHECKS+1)); FAILS=$((FAILS+1)); echo "FAIL: $*"; }
check() {  # check "description" command...
  local what=$1; shift
  if "$@"; then pass "$what"; else fail "$what"; fi
}
assert_not_reached() { fail "$*"; }
# Runs wavebox in the workspace; stdout then stderr in $OUT, status in $RC. stderr is a pipe of
# its own (as an agent host would give), so wavebox may relay it.
wb() {
  local errf="$SCRATCH/.stderr"
  : > "$errf"
  exec 9> >(cat > "$errf")
  local catpid=$!
  OUT=$(cd "$WS" && "$WAVEBOX" "$@" 2>&9)
  RC=$?
  exec 9>&-
  wait "$catpid" 2>/dev/null
  local err
  err=$(cat "$errf" 2>/dev/null)
  if [ -n "$err" ]; then OUT="${OUT:+$OUT$'\n'}$err"; fi
  rm -f "$errf"
}
# A listing of every path below a directory, to prove a run created nothing there.
snapshot() { (cd "$1" && find . -mindepth 1 -printf '%p %y %s\n' 2>/dev/null | sort); }
finish() {
  echo "$((CHECKS-FAILS)) passed, $FAILS failed"
  [ "$FAILS" -eq 0 ]
  exit $?
}
is_root() { [ "$(id -u)" -eq 0 ]; }
