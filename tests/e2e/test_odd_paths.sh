#!/usr/bin/env bash
# Odd paths keep working: workspaces whose names hold spaces, a newline, bytes that are not
# UTF-8, or that are reached through a symlink; guards and stubs there behave the same, and a
# refused path with a newline is reported on one escaped line.
. "$(dirname "$0")/lib.sh"
mkdir -p "$SCRATCH/target"; ln -s "$SCRATCH/target" "$SCRATCH/link"
for d in "with space" $'new\nline' $'bad\xffname' "link"; do
  dir="$SCRATCH/$d"; mkdir -p "$dir"; git -C "$dir" init -q
  before=$(cd "$dir" && find . -mindepth 1 -path ./.git -prune -o -print | sort)
  OUT=$(cd "$dir" && "$WAVEBOX" run -- sh -c 'echo ok > f.txt; echo evil > .git/hooks/pre-commit; mkdir -p .vscode; true' 2>&1); RC=$?
  shown=$(printf '%q' "$d")
  check "$shown: the run succeeds" [ "$RC" -eq 0 ]
  check "$shown: the workspace is writable" grep -q ok "$dir/f.txt"
  check "$shown: hooks stay protected" [ ! -e "$dir/.git/hooks/pre-commit" ]
  check "$shown: no stub is left" [ ! -e "$dir/.vscode" ]
  rm -f "$dir/f.txt"
  check "$shown: nothing else changed" [ "$(cd "$dir" && find . -mindepth 1 -path ./.git -prune -o -print | sort)" = "$before" ]
done
wb run -- sh -c 'echo x > "/etc/two
lines" 2>/dev/null; true'
check "a refused path with a newline is one escaped line" grep -qx 'deny file-write /etc/two\\x0alines' <<<"$OUT"
finish
