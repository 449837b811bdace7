#!/usr/bin/env bash
# Every C and C++ file of ours is as .clang-format says (clang-format -i FILE to fix one).
set -u
cd "${1:-.}" || exit 2
command -v clang-format >/dev/null || { echo "clang-format is not installed (scripts/bootstrap installs it)"; exit 1; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.c' '*.h' 2>/dev/null || find core bwrap engine cli netproxy seatbelt tests -name '*.[ch]pp' -o -name '*.[ch]')
clang-format --dry-run --Werror "${files[@]}" || { echo "not formatted: run clang-format -i on the files named above"; exit 1; }
echo "formatting ok (${#files[@]} files)"
