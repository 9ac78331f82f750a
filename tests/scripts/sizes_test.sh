#!/usr/bin/env bash
# scripts/check_sizes.sh against planted trees: each kind of function it measures (C++ functions,
# operators, lambdas and template lambdas, function-try-blocks; Python defs; shell functions) and
# each kind of file, once at the limit, which must pass, and once one line over it, alone in a
# tree of its own, which must fail naming that file and function.
# Usage: sizes_test.sh CHECK_SIZES_SH
set -u
check=${1:?usage: sizes_test.sh CHECK_SIZES_SH}
tmp=$(mktemp -d /tmp/ddft_sizes.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Prints N lines of TEXT.
repeat() {
  local i
  for ((i = 0; i < $1; i++)); do printf '%s\n' "$2"; done
}

# Each case prints a file whose one function (or the file itself) measures $1 lines: a function
# opening on the first line (the first line of HEAD) and closing on the last measures the lines
# between, its last line counted and its first not.
# cpp HEAD TAIL FIGURE: HEAD (one line), FIGURE - 1 lines of body, TAIL.
cpp() {
  printf '%s\n' "$1"
  repeat $(($3 - 1)) '  x += 1;'
  printf '%s\n' "$2"
}
case_plain() { cpp 'void plain(int& x) {' '}' "$1"; }
case_operator_eq() { cpp 'bool X::operator==(const X& o) const {' '}' "$1"; }
case_operator_shift() { cpp 'std::ostream& operator<<(std::ostream& os, const X& v) {' '}' "$1"; }
case_operator_index() { cpp 'int& X::operator[](size_t i) {' '}' "$1"; }
case_operator_bool() { cpp 'X::operator bool() const {' '}' "$1"; }
case_operator_call() {
  echo 'struct F {'
  cpp '  int operator()(int x) const {' '  }' "$1"
  echo '};'
}
case_template_lambda() { cpp 'auto f = [&]<typename T>(T x) {' '};' "$1"; }
case_constexpr_lambda() { cpp 'auto g = [](int x) constexpr {' '};' "$1"; }
case_decltype_return() { cpp 'auto h(int x) -> decltype(x) {' '}' "$1"; }
# A function-try-block: its body runs from `try` to its last handler's closing brace.
case_try_block() {
  printf 'void t(int& x) try {\n  x += 1;\n} catch (const std::exception&) {\n  x = 0;\n'
  cpp '} catch (...) {' '}' $(($1 - 4))
}
case_constructor_try_block() {
  printf 'X::X(int a) try : a_(a), b_{a} {\n  x += 1;\n'
  cpp '} catch (...) {' '}' $(($1 - 2))
}
case_cpp_file() { repeat "$1" 'int x;'; }
py() {
  printf '%s\n' "$1"
  repeat $(($2 - 1)) "$3"
}
case_python_def() { py 'def long_one(x):' "$1" '    x += 1'; }
case_python_method() {
  echo 'class C:'
  py '    def method(self, x):' "$1" '        x += 1'
}
case_python_file() { repeat "$1" 'x = 1'; }
case_shell_function() {
  echo '#!/usr/bin/env bash'
  cpp 'long_one() {' '}' "$1" | sed 's/x += 1;/: x/'
}
case_shell_file() {
  echo '#!/bin/sh'
  repeat $(($1 - 1)) ': x'
}

# NAME FILE FUNCTION: FUNCTION is what the report names ("" for a file over its limit).
cases=(
  "plain common/a.cpp plain"
  "operator_eq common/op.cpp operator=="
  "operator_shift sender/out.cpp operator<<"
  "operator_index receiver/index.cpp operator[]"
  "operator_bool iotest/conv.cpp operator bool"
  "operator_call linksim/call.hpp operator()"
  "template_lambda common/tl.cpp lambda"
  "constexpr_lambda common/cl.cpp lambda"
  "decltype_return common/dt.cpp h"
  "try_block receiver/try.cpp t"
  "constructor_try_block sender/ctor.cpp X"
  "cpp_file common/long.hpp"
  "python_def scripts/tool.py long_one"
  "python_method scripts/pkg/mod.py method"
  "python_def scripts/dd_tool_without_suffix long_one"
  "python_file scripts/long.py"
  "shell_function scripts/run.sh long_one"
  "shell_function scripts/daemon_without_suffix long_one"
  "shell_file scripts/long.sh"
)

# FIGURE ROOT NAME FILE: plants case NAME at FILE under ROOT. A Python script named without a
# suffix says what it is on its first line.
plant() {
  mkdir -p "$(dirname "$2/$4")"
  "case_$3" "$1" > "$2/$4"
  if [[ $4 == *without_suffix && $3 == python_* ]]; then sed -i '1i #!/usr/bin/python3' "$2/$4"; fi
}

fails=0
fail() {
  echo "FAIL $*"
  fails=$((fails + 1))
}

# Every case at the limit (80 lines a function, 600 a file) in one tree: nothing to report.
for c in "${cases[@]}"; do
  read -r name file _ <<< "$c"
  limit=80
  [[ $name == *_file ]] && limit=600
  plant "$limit" "$tmp/at_limit" "$name" "$file"
done
out=$(bash "$check" "$tmp/at_limit" 2>&1)
status=$?
if [[ $status -ne 0 ]] || grep -q 'lines (limit' <<< "$out"; then
  fail "cases at the limit reported (status $status):"
  echo "$out"
fi

# Each case one line over the limit, alone in its tree: status 1, and that file and function named.
n=0
for c in "${cases[@]}"; do
  read -r name file function <<< "$c"
  n=$((n + 1))
  root=$tmp/over_$n
  if [[ $name == *_file ]]; then
    plant 601 "$root" "$name" "$file"
    want="$file: 601 lines (limit 600)"
  else
    plant 81 "$root" "$name" "$file"
    want="function '$function' 81 lines (limit 80)"
  fi
  out=$(bash "$check" "$root" 2>&1)
  status=$?
  if [[ $status -ne 1 ]]; then
    fail "$name ($file): status $status, not 1: $out"
  elif ! grep -qF "$file" <<< "$out" || ! grep -qF "$want" <<< "$out"; then
    fail "$name ($file): no \"$want\" in: $out"
  else
    echo "ok   $name over the limit fails the check: $(grep -F "$want" <<< "$out")"
  fi
done

# A Python file that python3 cannot parse fails the check.
root=$tmp/unparsable
mkdir -p "$root/scripts"
printf 'def broken(:\n' > "$root/scripts/bad.py"
out=$(bash "$check" "$root" 2>&1)
if [[ $? -eq 0 ]] || ! grep -q "scripts/bad.py:1: not Python that python3 parses" <<< "$out"; then
  fail "an unparsable Python file passes, or fails for another reason: $out"
fi

# The allow-list, in a copy of the check: an entry excuses what it names, and only that; an
# entry without a reason, or one that excuses nothing, fails the check.
tool=$tmp/tool/scripts
mkdir -p "$tool"
cp "$check" "$(dirname "$check")/check_sizes.py" "$tool/"
root=$tmp/allowed
plant 81 "$root" python_def scripts/tool.py
plant 81 "$root" plain common/a.cpp
with_allow_list() {  # ENTRY...: the copy's allow-list holds these lines
  python3 - "$tool/check_sizes.sh" "$@" << 'PY'
import re, sys
path, entries = sys.argv[1], sys.argv[2:]
text = open(path).read()
lines = "".join(e + "\n" for e in entries)
text = re.sub(r"allow_list='\n.*?'", lambda m: "allow_list='\n" + lines + "'", text, count=1,
              flags=re.S)
open(path, "w").write(text)
PY
}
with_allow_list "scripts/tool.py:long_one | planted" "common/*.cpp | planted"
out=$(bash "$tool/check_sizes.sh" "$root" 2>&1)
if [[ $? -ne 0 ]] || [[ $(grep -c '\[allowed\]' <<< "$out") -ne 2 ]]; then
  fail "allow-list entries for both offenders: $out"
fi
with_allow_list "scripts/tool.py:other | planted" "common/*.cpp | planted"
out=$(bash "$tool/check_sizes.sh" "$root" 2>&1)
if [[ $? -ne 1 ]] || ! grep -q "function 'long_one' 81 lines (limit 80)$" <<< "$out" ||
  ! grep -q "entry 'scripts/tool.py:other' excuses nothing" <<< "$out"; then
  fail "an entry for another function excuses this one, or is not named as excusing nothing: $out"
fi
with_allow_list "scripts/tool.py | planted" "common/*.cpp | planted" "sender/*.cpp | planted"
out=$(bash "$tool/check_sizes.sh" "$root" 2>&1)
if [[ $? -ne 1 ]] || ! grep -q "entry 'sender/\*.cpp' excuses nothing" <<< "$out"; then
  fail "an entry that excuses nothing passes: $out"
fi
with_allow_list "scripts/tool.py | " "common/*.cpp | planted"
out=$(bash "$tool/check_sizes.sh" "$root" 2>&1)
if [[ $? -eq 0 ]] || ! grep -q "allow-list entry without a reason: scripts/tool.py |" <<< "$out"; then
  fail "an entry without a reason passes, or fails for another reason: $out"
fi

if [[ $fails -eq 0 ]]; then echo "ok   check_sizes.sh fails on every planted offender"; fi
exit $((fails > 0))
