#!/usr/bin/env bash
# Dependency direction (docs/architecture.md): which folder may include which. Also: pure files include
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
# bwrap/, by role: the planner, then the supervisor, then the launch, then the run (with warm/).
check bwrap/plan 'core|bwrap/plan|bwrap/shim'
check bwrap/supervise 'core|bwrap/plan|bwrap/supervise|bwrap/shim'
check bwrap/launch 'core|bwrap/plan|bwrap/supervise|bwrap/launch|bwrap/shim'
check bwrap/run 'core|bwrap'
check bwrap/warm 'core|bwrap'
check seatbelt 'core|seatbelt'
check netproxy 'core|netproxy'
check engine 'core|bwrap|netproxy|seatbelt|engine'
check serve 'core|engine|serve'
check cli 'core|engine|serve|cli'
# The shim (C, static, linked with no library of ours) includes only its own headers.
while IFS= read -r line; do
  echo "forbidden include: $line"; fail=1
done < <(grep -HnE '#include "' bwrap/shim/*.c bwrap/shim/*.h 2>/dev/null | grep -vE '#include "bwrap/shim/[a-z]+\.h"')
# The launcher (C, static) shares only the shim's wire header.
while IFS= read -r line; do
  echo "forbidden include: $line"; fail=1
done < <(grep -HnE '#include "[a-z]+/' launcher/*.c 2>/dev/null | grep -vE '#include "bwrap/shim/wire\.h"')
# core/ itself (not core/sys) must not include core/sys.
if grep -nE '#include "core/sys/' core/*.cpp core/*.hpp; then fail=1; fi
while IFS= read -r f; do
  if grep -nE '#include <(unistd\.h|sys/)|getenv\(' "$f"; then echo "pure file $f touches the system"; fail=1; fi
done < <(grep -l '^// pure' core/*.cpp engine/*.cpp bwrap/*/*.cpp seatbelt/*.cpp netproxy/*.cpp 2>/dev/null)
[ $fail -eq 0 ] && echo "dependency direction ok"
exit $fail
