#!/usr/bin/env bash
# Runs one command and passes only when it exits with the status given and prints exactly the
# lines given, no more, no fewer (stdout and stderr together), so that a --help page or another
# error that merely names the option cannot pass for the message expected.
#
#   expect.sh [--with-file NAME]... STATUS LINE... -- COMMAND [ARG...]
#
# A LINE is compared as text; one that starts with "~" is instead an extended regular expression
# that the whole line must match, in which @TIME@ stands for the log's time stamp (MM/DD-HH:MM:SS).
# A LINE "..." stands for any lines (none included) up to the first that matches the LINE after
# it (for a --help page: only the lines that matter are given). "@SCRATCH@" in an ARG or a LINE
# is a folder made for this run alone (removed afterwards), so that no two tests, nor two runs of
# one, share a hot folder, its journal or a state folder; --with-file NAME puts a small file NAME
# there first. On a mismatch it prints what was expected and what came, and exits 1.
set -uo pipefail
files=()
while [[ ${1:-} == --with-file ]]; do
  files+=("$2")
  shift 2
done
status=$1
shift
expected=()
while (($#)) && [[ $1 != -- ]]; do
  expected+=("$1")
  shift
done
[[ ${1:-} == -- && $# -ge 2 ]] || { echo "expect.sh: usage: see the script's header" >&2; exit 2; }
shift
scratch=$(mktemp -d "${TMPDIR:-/tmp}/ddft-cli.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
for f in "${files[@]}"; do printf 'a file the test put here\n' > "$scratch/$f"; done
cmd=()
for a in "$@"; do cmd+=("${a//@SCRATCH@/$scratch}"); done

output=$("${cmd[@]}" 2>&1 < /dev/null)
got_status=$?
mapfile -t got <<< "$output"
[[ -z $output ]] && got=()
time_re='[0-9]{2}/[0-9]{2}-[0-9]{2}:[0-9]{2}:[0-9]{2}'
matches() {  # matches LINE WANT: true when LINE is WANT (text, or ~regex)
  local want=${2//@SCRATCH@/$scratch}
  if [[ $want == '~'* ]]; then
    local re="^(${want:1})\$"
    re=${re//@TIME@/$time_re}
    [[ $1 =~ $re ]]
  else
    [[ $1 == "$want" ]]
  fi
}
fail=""
((got_status == status)) || fail="exit status $got_status, expected $status"
j=0 skipping=0
for want in "${expected[@]}"; do
  [[ -n $fail ]] && break
  if [[ $want == ... ]]; then
    skipping=1
    continue
  fi
  while ((skipping && j < ${#got[@]})) && ! matches "${got[$j]}" "$want"; do ((++j)); done
  if ((j >= ${#got[@]})); then
    fail="no line for: $want"
  elif ! matches "${got[$j]}" "$want"; then
    fail="line $((j + 1)) differs"
  fi
  ((++j))
  skipping=0
done
if [[ -z $fail ]] && ((!skipping && j < ${#got[@]})); then
  fail="${#got[@]} line(s), expected ${#expected[@]}"
fi
if [[ -n $fail ]]; then
  echo "expect.sh: FAILED: $fail"
  echo "command: ${cmd[*]}"
  echo "expected (status $status):"
  printf '  |%s\n' "${expected[@]}"
  echo "got (status $got_status):"
  printf '  |%s\n' "${got[@]}"
  exit 1
fi
echo "expect.sh: status $got_status and ${#got[@]} line(s) as expected"
