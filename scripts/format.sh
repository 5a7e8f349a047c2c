#!/usr/bin/env bash
# Formats (default) or checks (--check) every C++ source tracked by git.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.h' '*.cpp' '*.cc' '*.hpp' \
  | grep -v '^cmake/testdata/')
if [[ "${1:-}" == "--check" ]]; then
  clang-format --dry-run --Werror "${files[@]}"
else
  clang-format -i "${files[@]}"
fi
