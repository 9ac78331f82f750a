#!/usr/bin/env bash
# ctest fuzz.seeds.current: the checked-in seed corpus is what make_seeds writes now.
#   check_seeds.sh MAKE_SEEDS CORPUS SCRATCH
set -euo pipefail
make_seeds=$1 corpus=$2 scratch=$3
rm -rf "$scratch"
"$make_seeds" "$scratch" > /dev/null
if ! diff -rq "$scratch" "$corpus" > /dev/null; then
  echo "the seed corpus $corpus is out of date: regenerate it with bash scripts/fuzz.sh --seeds" \
    "(or build/bin/make_seeds tests/fuzz/corpus) and commit it"
  exit 1
fi
rm -rf "$scratch"
