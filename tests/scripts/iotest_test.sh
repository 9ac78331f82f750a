#!/usr/bin/env bash
# dd_iotest for real on a temp folder: a tiny sweep's table (shape, every cell a positive number),
# its JSON, the programs' own switches, the dialogue on a pseudo-terminal, bad input (one line,
# nothing written), Ctrl-C (files removed).
# Usage: iotest_test.sh DD_IOTEST DD_FILE_RECEIVE DD_FILE_SEND
set -u
IOTEST=$1 RECEIVE=$2 SEND=$3
work=$(mktemp -d /tmp/ddft_iotest.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/disk"
fails=0
check() {  # check DESCRIPTION COMMAND...
  if "${@:2}"; then echo "ok   $1"; else echo "FAIL $1"; fails=$((fails + 1)); fi
}
no_test_files() { [ -z "$(ls -A "$work/disk")" ]; }

# Table rows of a report: header, rule, one per block size, each cell a positive number.
table_ok() {  # table_ok REPORT ROWS COLS
  python3 - "$1" "$2" "$3" <<'EOF'
import re, sys
text, rows, cols = open(sys.argv[1]).read().splitlines(), int(sys.argv[2]), int(sys.argv[3])
i = next(k for k, l in enumerate(text) if l.startswith("  # of THREADS"))
head = text[i].split("|")[1:]
assert len(head) == cols, head
assert text[i + 1].startswith("Buffer size KB  +") and text[i + 1].count("+") == cols + 1
for l in text[i + 2:i + 2 + rows]:
    cells = l.split("|")
    assert re.fullmatch(r"\d+ +", cells[0]), l
    assert len(cells) == cols + 1, l
    for c in cells[1:]:
        assert re.fullmatch(r"\d+\.\d", c.strip()) and float(c) > 0, l
assert text[i + 2 + rows].startswith("(MB/s"), text[i + 2 + rows]
EOF
}

# 1. A tiny write sweep: two buffer sizes, two thread counts, two files at once, rwd.
"$IOTEST" --path "$work/disk" --size-mb 8 --runs 2 --block-kb 64,256 --threads 1,2 --files 2 \
  --mode rwd --json "$work/w.json" >"$work/w.out" 2>"$work/w.err"
check "write sweep exits 0" test $? -eq 0
check "write table: 2 rows x 2 columns of positive figures" table_ok "$work/w.out" 2 2
check "write report names the flags" grep -Eq "dd_file_receive flags:  --writers [12] --write-block-kb (64|256) --write-mode rwd --direct-io on" "$work/w.out"
check "write report gives config lines" grep -Eq '^    write-block-kb = (64|256)$' "$work/w.out"
check "the small size is warned about only where the cache could serve it" \
  bash -c "! grep -q 'page cache can use' '$work/w.out'"
check "JSON is valid with 4 cells of 2 runs" python3 -c "
import json; d = json.load(open('$work/w.json'))
assert d['test'] == 'write' and len(d['cells']) == 4
assert all(len(c['runs_mbps']) == 2 and c['mean_mbps'] > 0 for c in d['cells'])
assert d['recommendation']['flags'].startswith('--writers')"
check "no test file left after the write sweep" no_test_files

# 2. The receiver's switch (buffered, so the page-cache warning shows) and the sender's.
"$RECEIVE" --test-io --path "$work/disk" --size-mb 4 --runs 1 --block-kb 128 --threads 1,3 \
  --direct-io off >"$work/r.out" 2>&1
check "dd_file_receive --test-io exits 0" test $? -eq 0
check "dd_file_receive --test-io: 1 row x 2 columns" table_ok "$work/r.out" 1 2
check "buffered writes below the RAM get the page-cache warning" grep -q "Warning: the file size (4 MB) is below the RAM the page cache can use" "$work/r.out"
"$SEND" --test-read-io --path "$work/disk" --size-mb 8 --runs 2 --block-kb 64,1024 --threads 1,2 \
  --json - >"$work/s.json" 2>"$work/s.out"
check "dd_file_send --test-read-io exits 0" test $? -eq 0
check "read table (on stderr with --json -): 2 rows x 2 columns" table_ok "$work/s.out" 2 2
check "read report names the sender's flags" grep -Eq "dd_file_send flags:  --readers [12] --read-block-kb (64|1024)" "$work/s.out"
check "read JSON on stdout" python3 -c "import json; assert json.load(open('$work/s.json'))['test'] == 'read'"
check "no test file left after the read sweep" no_test_files

# 3. Bad input: one line on stderr, exit 2, nothing written.
one_line_with() { [ "$(wc -l <"$2")" -eq 1 ] && grep -qF -- "$1" "$2"; }
bad() {  # bad DESCRIPTION EXPECTED-TEXT ARGS...
  "$IOTEST" "${@:3}" >"$work/bad.out" 2>"$work/bad.err"
  local rc=$?
  check "$1: exit 2" test $rc -eq 2
  check "$1: one line naming the problem" one_line_with "$2" "$work/bad.err"
  check "$1: nothing written" no_test_files
}
bad "missing path" "cannot test '$work/nowhere': No such file or directory" --path "$work/nowhere" --size-mb 1
bad "a non-number size" "dd_iotest: error: Could not convert: --size-mb = abc" --path "$work/disk" --size-mb abc
bad "a non-number in the buffer list" "buffer sizes: 'x' is not a number" --path "$work/disk" --block-kb 64,x
bad "no space for the test file" "not enough free space in '$work/disk'" --path "$work/disk" --size-mb 16000000
bad "no path at all, not on a terminal" "no path to test given" --size-mb 1 </dev/null
bad "files at once on a read test" "applies to the write test only" --test read --path "$work/disk" --files 2
bad "an unwritable JSON file" "cannot write '$work/no/such/dir/x.json'" --path "$work/disk" --size-mb 1 --json "$work/no/such/dir/x.json"

# 4. The dialogue, on a pseudo-terminal (script(1) gives the program one): answers piped in.
printf '%s\n' "$work/disk" 4 "" 1 128 1 "" "" "" |
  script -qec "$IOTEST" /dev/null >"$work/tty.out" 2>&1
check "dialogue: asks for the path" grep -q "Please enter the drive/path you wish to test" "$work/tty.out"
check "dialogue: shows defaults" grep -q "Please enter the timeout length (secs) per run (default 60 secs)" "$work/tty.out"
check "dialogue: runs the sweep it was given" grep -Eq "^128 +\|[0-9]+\.[0-9]" "$work/tty.out"
check "no test file left after the dialogue" no_test_files

# 5. Ctrl-C in the middle: exit 130, the table so far, the files removed.
"$IOTEST" --path "$work/disk" --size-mb 64 --runs 50 --block-kb 64 --threads 1 --timeout 30 \
  --json - >"$work/int.json" 2>"$work/int.err" &
pid=$!
for _ in $(seq 100); do grep -q "run 2/50" "$work/int.err" && break; sleep 0.1; done
kill -INT $pid
wait $pid
check "Ctrl-C: exit 130" test $? -eq 130
check "Ctrl-C: says so" grep -q "Interrupted: the test files were removed" "$work/int.err"
check "Ctrl-C: the JSON on stdout stays valid and says interrupted" python3 -c "
import json; d = json.load(open('$work/int.json')); assert d['interrupted'] is True"
check "Ctrl-C: no test file left" no_test_files

echo "$fails failure(s)"
[ "$fails" -eq 0 ]
