#!/usr/bin/env bash
# Every document a file of ours refers to is in the repository: no requirement numbers, spec
# sections or tracker numbers of documents a reader of this repository cannot open.
set -u
root=${1:-.}
cd "$root" || exit 2
pattern='\bSPEC §|\bSPEC [A-Z]+-[0-9]|\bseed [0-9]{3}\b|\bissue [0-9]+\b|\b(FS|NET)-[0-9]+\b|\.\./shared/'
if git rev-parse --git-dir >/dev/null 2>&1; then
  hits=$(git grep -nIE "$pattern" -- . ':!tests/check_refs.sh' || true)
else
  hits=$(grep -rnIE "$pattern" --exclude-dir=build --exclude-dir=.git --exclude=check_refs.sh . || true)
fi
if [ -n "$hits" ]; then
  echo "references to documents outside the repository:"
  echo "$hits"
  exit 1
fi
echo "references ok"
