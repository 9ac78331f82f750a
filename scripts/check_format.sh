#!/usr/bin/env bash
# Checks that every C++ source in git is formatted as the repository's .clang-format says
# (Google style, 100 columns), with Debian 12's clang-format (14). Prints each difference as
# file:line and exits 1 when there is any; the fix is
#   git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
#
#   bash scripts/check_format.sh [FILE...]   only the files named (default: every tracked source)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
tool=$(command -v clang-format || command -v clang-format-14 || true)
if [[ -z "$tool" ]]; then
  echo "check_format.sh: clang-format is not installed (run scripts/setup.sh)" >&2
  exit 2
fi
if (($#)); then
  files=("$@")
else
  # Outside a git checkout (a source tarball), every source below the product's folders.
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' 2> /dev/null ||
    find common sender receiver iotest linksim tests \( -name '*.cpp' -o -name '*.hpp' \) | sort)
fi
if "$tool" --dry-run -Werror "${files[@]}" 2> >(grep -E '^[^ ].*: error: ' >&2); then
  echo "check_format.sh: ${#files[@]} file(s) formatted as .clang-format says"
else
  echo "check_format.sh: formatting differs from .clang-format (see above); fix with:" \
    "git ls-files '*.cpp' '*.hpp' | xargs clang-format -i" >&2
  exit 1
fi
