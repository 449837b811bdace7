#!/usr/bin/env bash
# Dependency direction (ARCHITECTURE.md): which folder may include which. Also: pure files include
# no system headers and read no environment.
set -u
root=${1:-.}
cd "$root" || exit 2
fail=0
check() {  # folder, allowed include prefixes (regex)
  local dir=$1 allowed=$2
  while IFS= read -r line; do
    echo "forbidden include: $line"; fail=1
  done < <(grep -HnE '#include "[a-z]+/' "$dir"/*.cpp "$dir"/*.hpp 2>/dev/null | grep -vE "#include \"($allowed)/")
}
check core 'core'
check core/sys 'core'
check bwrap 'core|bwrap'
check macos 'core|macos'
check netproxy 'core|netproxy'
check engine 'core|bwrap|netproxy|macos|engine'
check serve 'core|engine|serve'
# The launcher (C, static) shares only the shim's wire header.
while IFS= read -r line; do
  echo "forbidden include: $line"; fail=1
done < <(grep -HnE '#include "[a-z]+/' launcher/*.c 2>/dev/null | grep -vE '#include "bwrap/shim/wire\.h"')
# core/ itself (not core/sys) must not include core/sys.
if grep -nE '#include "core/sys/' core/*.cpp core/*.hpp; then fail=1; fi
while IFS= read -r f; do
  if grep -nE '#include <(unistd\.h|sys/)|getenv\(' "$f"; then echo "pure file $f touches the system"; fail=1; fi
done < <(grep -l '^// pure' core/*.cpp engine/*.cpp bwrap/*.cpp macos/*.cpp netproxy/*.cpp 2>/dev/null)
[ $fail -eq 0 ] && echo "dependency direction ok"
exit $fail
