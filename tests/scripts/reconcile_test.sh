#!/usr/bin/env bash
# Tests of scripts/dd_reconcile on crafted send manifests and receive logs (the receive lines as
# receiver/assembly/assembler.cpp and receiver/pipeline.cpp write them):
#   1. every outcome (delivered, Key: none, key mismatch, failed, refused, filtered, unfinished,
#      never seen, not sent, not in manifest), the notes (--repeat, collision, repaired,
#      on-complete) and the repair counts' JSON fields, a path sent in two sessions, failures of
#      a replaced session logged after the next one started, a session whose start is in no log
#      given (matched by path alone), a file left by a receiver that stopped, and a name holding
#      " FAILED: ";
#   2. three rotated logs given in the wrong order, one gzip-compressed, across a new year (the
#      text format has no year), and the same run as --log-format json, which must give the
#      same report;
#   3. the text report's aligned columns, --problems, --json, the summary and the exit status
#      (0 when all is delivered, 1 otherwise);
#   4. bad input: a missing or unreadable file, a manifest line that is not JSON or lacks a
#      field, a JSON log line that is not JSON, a damaged .gz: exit 2, one line on stderr naming
#      file and line, nothing on stdout.
#   5. a receiver killed and restarted mid-session (receiver/delivery/recovery.cpp's start-up lines): a
#      file left half-written and one delivered but not logged, matched by the session and file
#      id they name (the same path open in another session), a file logged Passed twice (no
#      problem), a file named failed twice (a note), files joined mid-file and never announced,
#      in both log formats.
#   6. several manifests and several receivers (--manifest, --receiver; two --shard host pairs
#      whose lanes end on two receivers): each receiver read as its own stream, each outcome
#      named with its receiver (a file delivered on B only, one failed on A, one failed on A and
#      delivered on B, one never seen), the text and JSON reports, one receiver given with the
#      flags giving the positional form's report byte for byte, and bad input.
# Usage: reconcile_test.sh DD_RECONCILE
set -uo pipefail
reconcile=$(realpath "$1")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work" || exit 1
pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
expect() { if [[ "$2" == "$3" ]]; then ok; else bad "$1: expected '$2', got '$3'"; fi; }
contains() { if [[ "$3" == *"$2"* ]]; then ok; else bad "$1: '$2' not in: $3"; fi; }

A=0f3c9a7d12e45b60  # the main sender session
B=1b2c3d4e5f607182  # the sender restarted: A is replaced
C=c0c0c0c0c0c0c0c0  # in the manifest; its start line is in an older log not given
D=d00dd00dd00dd00d  # another sender: in the logs, not in the manifest
rec=/srv/ddft/inbox/.ddft/failed

# One manifest line: SESSION ID PATH SIZE KEY(null|0x...) [failed REASON]
m() {
  local verify=B2B key="\"$5\"" status='"status":"sent"'
  [[ "$5" == null ]] && key=null verify=NONE
  [[ "${6:-}" == failed ]] && status="\"status\":\"failed\",\"reason\":\"$7\""
  printf '{"time":"2026-01-01T00:00:00.000+01:00","session":"%s","file_id":%s,"path":"%s","size":%s,"verify":"%s","key":%s,%s}\n' \
    "$1" "$2" "$3" "$4" "$verify" "$key" "$status"
}
# The receiver's lines: file_line PATH SIZE KEY-PART, announce PATH SIZE.
file_line() { echo "File: $1, Trans: $2 (bytes), Time: 00:00:00.010, Rate: 1.000 (MB/s), $3"; }
announce() { echo "Info: $1, Size: $2 (bytes) . . . receiving"; }
start() { echo "Info: receiving on 0.0.0.0:47555 into /srv/ddft/inbox (state: /srv/ddft/inbox/.ddft, failed files: $rec); buffer 1024 MB"; }

{
  m $C 1 c/old.txt 10 0x0000C0DE
  m $A 1 a/ok.txt 5 0x6999CF78
  m $A 2 a/none.txt 6 null
  m $A 3 a/bad.txt 7 0x11111111
  m $A 4 a/lost.bin 2000 0x44444444
  m $A 5 ../evil 8 0x55555555
  m $A 6 a/skip.tmp 9 0x66666666
  m $A 7 a/rep.bin 100 0x0000AAAA
  m $A 8 a/same.txt 11 0x0000BBBB
  m $A 9 'a/odd FAILED: name.txt' 10 0x99999999
  m $A 10 a/slow.bin 1000 0x10101010
  m $A 11 a/crash.bin 4096 0x11111111
  m $A 0 a/unreadable.txt 0 null failed "cannot read '/data/a/unreadable.txt': Permission denied"
  m $A 12 a/gone.txt 12 0x12121212
  m $A 13 a/big.bin 777 0x13131313
  m $A 14 a/twice.bin 50 0x14141414
  m $B 1 a/slow.bin 1500 0x20202020
  m $B 5 a/big.bin 777 0x13131313
  m $B 6 a/twice.bin 60 0x16161616
  m $B 2 a/ok.txt 5 0x7777AAAA
  m $B 3 a/half.bin 5000 0x30303030
  m $B 4 a/aborted.bin 300 null failed "read error on '/data/a/aborted.bin': Input/output error"
  m $B 0 'a/new\nline.txt' 0 null failed "cannot read '/data/a/new?line.txt': Permission denied"
} > manifest.jsonl

# The oldest log (given second, compressed): ends on 31 December.
ts() { while IFS= read -r line; do echo "$1 $line"; done; }
{
  # Lines of session C, whose start line is in a log not given.
  { announce c/old.txt 10; file_line c/old.txt 10 "Key: 0x0000C0DE, B2B Passed"; } | ts 12/31-23:50:00
  start | ts 12/31-23:54:00
  {
    echo "Info: sender session $A started"
    announce a/ok.txt 5
    file_line a/ok.txt 5 "Key: 0x6999CF78, B2B Passed"
    announce a/none.txt 6
    file_line a/none.txt 6 "Key: none, NONE Not verified"
    announce a/bad.txt 7
    file_line a/bad.txt 7 "Key: 0x22222222, B2B Passed"
    announce a/lost.bin 2,000
    echo "Error: a/lost.bin FAILED: the sender went on to the next file before this one was complete: data lost; received 1,000 of 2,000 bytes; missing bytes 1000-2000; record: $rec/20251231-235505-$A-4-lost.bin.json"
    announce a/crash.bin 4,096
  } | ts 12/31-23:55:01
  # The receiver stops with a/crash.bin in flight; at its restart it finds it (by its temporary
  # name) and the sender's session goes on.
  echo "Warn: a/.ddft-$A-11.part: left incomplete by an earlier run of the receiver; moved to the failed folder (record: $rec/20251231-235800-$A-11-crash.bin.json)" | ts 12/31-23:58:00
  start | ts 12/31-23:58:00
  echo "Info: sender session $A started" | ts 12/31-23:58:01
} > rx-old.log
touch -d '2025-12-31 23:59:00' rx-old.log
# The middle one: session A goes on (no start line in this file), then B replaces it. It spans
# the new year.
{
  echo "Error: refused file \"../evil\": path has a '..' component (record: $rec/20260101-000001-$A-5-evil.json)" | ts 12/31-23:59:59
  {
  echo "Info: filtered \"a/skip.tmp\": matches --exclude '*.tmp'"
  announce a/rep.bin 100
  echo "Info: a/rep.bin: complete after copy 2 of 3 (--repeat)"
  file_line a/rep.bin 100 "Key: 0x0000AAAA, B2B Passed"
  echo "Info: a/rep.bin: repaired: FEC rebuilt 2 packet(s), repeats filled 5 chunk(s)"
  announce a/same.txt 11
  echo "Info: a/same.txt: the existing file of that name was kept as a/same.1.txt"
  file_line a/same.txt 11 "Key: 0x0000BBBB, B2B Passed"
  echo "Warn: on-complete \"a/same.txt\": exit 3 (0.012 s)"
  echo "Error: on-complete \"a/rep.bin\": cannot start /usr/local/bin/scan: No such file or directory"
  announce 'a/odd FAILED: name.txt' 10
  echo "Error: a/odd FAILED: name.txt FAILED: no packet for 5.0 s: the sender stopped or the link went down before the file's end; received 0 of 10 bytes; missing bytes 0-10; record: $rec/x.json"
  file_line x/extra.txt 3 "Key: 0x0000EEEE, B2B Passed"
  echo "Info: x/extra.txt: repaired: FEC rebuilt 1 packet(s), repeats filled 0 chunk(s)"
  announce a/slow.bin 1,000
  announce a/big.bin 777
  announce a/twice.bin 50
  echo "Info: session $A: 9 file(s) passed, 2 failed, 1 refused; packets: 90 received, 0 lost, 0 rejected, 0 from other sessions"
  echo "Info: sender session $B started"
  # The sender resends a/big.bin (same size) after a restart: A's fails as replaced after B's
  # announce; B's arrives.
  announce a/big.bin 777
  echo "Error: a/big.bin FAILED: sender restarted (new session); received 700 of 777 bytes; record: $rec/big.json"
  file_line a/big.bin 777 "Key: 0x13131313, B2B Passed"
  announce a/slow.bin 1,500
  announce a/twice.bin 60
  } | ts 01/01-00:00:05
} > rx-mid.log
touch -d '2026-01-01 00:00:30' rx-mid.log
# The newest: A's slow.bin fails as replaced only after B announced its own slow.bin and after
# another sender's session D started; B's slow.bin completes after D started too.
{
  echo "Info: session $B: 0 file(s) passed, 0 failed, 0 refused; packets: 9 received, 0 lost, 0 rejected, 0 from other sessions"
  echo "Info: sender session $D started"
  echo "Error: a/slow.bin FAILED: sender restarted (new session); received 1,000 of 1,000 bytes; record: $rec/y.json"
  file_line a/slow.bin 1,500 "Key: 0x20202020, B2B Passed"
  echo "Error: a/slow.bin FAILED: sender restarted (new session); received 5 of 9 bytes; record: $rec/d.json"
  # B's a/twice.bin (60 bytes) fails as replaced by D before A's (50 bytes), which lags: the
  # sizes tell them apart.
  echo "Error: a/twice.bin FAILED: sender restarted (new session); received 60 of 60 bytes; record: $rec/t60.json"
  echo "Error: a/twice.bin FAILED: sender restarted (new session); received 10 of 50 bytes; record: $rec/t50.json"
  announce d/other.txt 4
  file_line d/other.txt 4 "Key: 0x0000D0D0, B2B Passed"
  echo "Info: sender session $B started"
  announce a/ok.txt 5
  file_line a/ok.txt 5 "Key: 0x7777AAAA, B2B Passed"
  announce a/half.bin 5,000
} | ts 01/01-00:01:00 > rx-new.log
touch -d '2026-01-01 00:02:00' rx-new.log
gzip -k rx-old.log && touch -d '2025-12-31 23:59:00' rx-old.log.gz

# outcome_of JSON SESSION PATH: "outcome|detail|notes" of that manifest line in --json output.
outcome_of() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("session") == sys.argv[2] and r.get("path") == sys.argv[3]:
        print(r["outcome"] + "|" + r["detail"] + "|" + "; ".join(r["notes"]))
' "$@"
}

# --- 1. Every outcome, from the three logs in the wrong order (newest, oldest, middle).
"$reconcile" --json manifest.jsonl rx-new.log rx-old.log.gz rx-mid.log > report.json 2> err.txt
expect "exit status with problems" 1 "$?"
expect "stderr" "" "$(cat err.txt)"
check() {  # check SESSION PATH EXPECTED-PREFIX
  local got
  got=$(outcome_of report.json "$1" "$2")
  [[ "$got" == "$3"* ]] && ok || bad "$2 ($1): expected '$3...', got '$got'"
}
check $C c/old.txt "delivered|key 0x0000C0DE|session $C does not start in the receive logs: matched by path alone"
check $A a/ok.txt "delivered|key 0x6999CF78|"
check $A a/none.txt "delivered|key none|"
check $A a/bad.txt "key mismatch|manifest key 0x11111111, receive log key 0x22222222|"
check $A a/lost.bin "failed|the sender went on to the next file before this one was complete: data lost; received 1,000 of 2,000 bytes; missing bytes 1000-2000; record: $rec/20251231-235505-$A-4-lost.bin.json|"
check $A ../evil "refused|path has a '..' component (record: $rec/20260101-000001-$A-5-evil.json)|"
check $A a/skip.tmp "filtered|matches --exclude '*.tmp'|"
check $A a/rep.bin "delivered|key 0x0000AAAA|complete after copy 2 of 3 (--repeat); repaired: FEC rebuilt 2 packet(s), repeats filled 5 chunk(s); on-complete: cannot start /usr/local/bin/scan: No such file or directory (Error)"
check $A a/same.txt "delivered|key 0x0000BBBB|the existing file of that name was kept as a/same.1.txt; on-complete: exit 3 (0.012 s) (Warn)"
check $A "a/odd FAILED: name.txt" "failed|no packet for 5.0 s: the sender stopped or the link went down before the file's end; received 0 of 10 bytes"
check $A a/slow.bin "failed|sender restarted (new session); received 1,000 of 1,000 bytes; record: $rec/y.json|"
check $A a/crash.bin "failed|left incomplete by an earlier run of the receiver (found at start-up); record: $rec/20251231-235800-$A-11-crash.bin.json|"
check $A a/unreadable.txt "not sent|cannot read '/data/a/unreadable.txt': Permission denied|"
check $A a/gone.txt "never seen||"
check $B a/slow.bin "delivered|key 0x20202020|"
check $A a/big.bin "failed|sender restarted (new session); received 700 of 777 bytes"
check $B a/big.bin "delivered|key 0x13131313|"
check $A a/twice.bin "failed|sender restarted (new session); received 10 of 50 bytes"
check $B a/twice.bin "failed|sender restarted (new session); received 60 of 60 bytes"
check $B a/ok.txt "delivered|key 0x7777AAAA|"
check $B a/half.bin "unfinished|announced, no outcome after it in the logs given|"
check $B a/aborted.bin "not sent|read error on '/data/a/aborted.bin': Input/output error|"
expect "x/extra.txt is session A's" "" "$(outcome_of report.json $D x/extra.txt)"
check $A x/extra.txt "not in manifest||repaired: FEC rebuilt 1 packet(s), repeats filled 0 chunk(s)"
# The repair counts as JSON fields (null where the log has no "repaired:" line).
repairs_of() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("session") == sys.argv[2] and r.get("path") == sys.argv[3]:
        print(json.dumps([r["fec_rebuilt"], r["repeat_filled"]]))
' "$@"
}
expect "a/rep.bin repairs" "[2, 5]" "$(repairs_of report.json $A a/rep.bin)"
expect "x/extra.txt repairs" "[1, 0]" "$(repairs_of report.json $A x/extra.txt)"
expect "a/ok.txt repairs" "[null, null]" "$(repairs_of report.json $A a/ok.txt)"
check $D d/other.txt "not in manifest||"
summary=$(tail -n 1 report.json)
for kv in '"delivered": 8' '"key mismatch": 1' '"failed": 7' '"refused": 1' '"filtered": 1' \
  '"unfinished": 1' '"never seen": 1' '"not sent": 3' '"not in manifest": 2' '"files": 23' \
  '"exit": 1' "\"sessions_not_in_logs\": [\"$C\"]" '"unmatched_in_logs": {"failed": 1,'; do
  contains "summary" "$kv" "$summary"
done
# The order the logs are given in does not matter; the order they are read in (here the
# newest last) is that of their first line, years included.
"$reconcile" --json manifest.jsonl rx-old.log.gz rx-mid.log rx-new.log > ordered.json
expect "the logs in order give the same report" "$(cat report.json)" "$(cat ordered.json)"
# Copied without their times (all modified on 5 January): the year of each is still right.
mkdir copied && cp rx-new.log rx-old.log.gz rx-mid.log copied/ && touch -d '2026-01-05 12:00' copied/*
"$reconcile" --json manifest.jsonl copied/rx-mid.log copied/rx-new.log copied/rx-old.log.gz |
  sed -E 's|"log": "copied/|"log": "|' > copied.json
expect "logs copied without their times" "$(cat report.json)" "$(cat copied.json)"
# Without the oldest log, session A's start is missing: its lines in the middle log are matched
# by path alone; a/ok.txt and a/bad.txt are then never seen.
"$reconcile" --json manifest.jsonl rx-new.log rx-mid.log > partial.json
check_p() { local got; got=$(outcome_of partial.json "$1" "$2"); [[ "$got" == "$3"* ]] && ok || bad "partial: $2: expected '$3...', got '$got'"; }
check_p $A a/ok.txt "never seen||session $A does not start in the receive logs"
check_p $A a/rep.bin "delivered|key 0x0000AAAA|complete after copy 2 of 3 (--repeat); repaired: FEC rebuilt 2 packet(s), repeats filled 5 chunk(s); on-complete: cannot start /usr/local/bin/scan: No such file or directory (Error); session $A does not start in the receive logs: matched by path alone"

# --- 2. The same run as --log-format json (msg is the text line's message) gives the same report.
to_json() {
  python3 -c '
import json, sys
for line in open(sys.argv[1], encoding="utf-8"):
    stamp, msg = line[:14], line[15:].rstrip("\n")
    year = "2025" if stamp.startswith("12/") else "2026"
    time = f"{year}-{stamp[0:2]}-{stamp[3:5]}T{stamp[6:14]}.000+01:00"
    level = msg.split(":", 1)[0].lower()
    print(json.dumps({"time": time, "level": level, "program": "dd_file_receive", "msg": msg}))
' "$1"
}
for f in old mid new; do to_json "rx-$f.log" > "rx-$f.json"; done
gzip rx-old.json
"$reconcile" --json --log-format json manifest.jsonl rx-mid.json rx-new.json rx-old.json.gz \
  > report-jl.json
expect "exit status (json logs)" 1 "$?"
expect "json logs give the report of the text logs" \
  "$(sed -E 's/"log": "[^"]*"//' report.json)" "$(sed -E 's/"log": "[^"]*"//' report-jl.json)"
# Auto-detected too.
"$reconcile" --json manifest.jsonl rx-mid.json rx-new.json rx-old.json.gz > report-auto.json
expect "json logs detected" "$(cat report-jl.json)" "$(cat report-auto.json)"
# A JSON log's last line cut short (still being written) is skipped with a note.
{ cat rx-new.json; printf '{"time":"2026-01-01T00:03:00.000+01:00","level":"info","msg":"File: a/ha'; } \
  > rx-cut.json
"$reconcile" manifest.jsonl rx-old.json.gz rx-mid.json rx-cut.json > /dev/null 2> err.txt
expect "cut last line: exit status" 1 "$?"
contains "cut last line: note" "rx-cut.json:$(wc -l < rx-cut.json | awk '{print $1 + 1}'): incomplete last line skipped" "$(cat err.txt)"

# --- 3. The text report.
"$reconcile" manifest.jsonl rx-old.log.gz rx-mid.log rx-new.log > report.txt
expect "text: exit status" 1 "$?"
header=$(head -n 1 report.txt)
expect "text: header" "OUTCOME          SESSION           PATH                    DETAIL" "$header"
col=${header%%DETAIL*}
# Every row with a short path starts its detail in the DETAIL column.
row=$(grep -E '^key mismatch ' report.txt)
expect "text: key mismatch row" \
  "key mismatch     $A  a/bad.txt               manifest key 0x11111111, receive log key 0x22222222" "$row"
row=$(grep -E '^refused ' report.txt)
expect "text: refused row's detail column" "path has a '..'" "${row:${#col}:15}"
grep -qE "^never seen +$A +a/gone.txt *$" report.txt && ok || bad "text: never seen row: $(cat report.txt)"
grep -qE "^not in manifest +$D +d/other.txt +key 0x0000D0D0$" report.txt && ok ||
  bad "text: not in manifest row"
# A name a terminal would not show as it is (a newline) is shown as a JSON string.
grep -qF '"a/new\nline.txt"' report.txt && ok || bad "text: a newline in a name is not quoted"
for kv in "delivered  *8" "key mismatch  *1" "failed  *7" "never seen  *1" "not sent  *3" \
  "not in manifest  *2" "Summary: 23 file\(s\) in the manifest" \
  "the receive logs also hold 1 failed file" "do not start in the receive logs: $C"; do
  grep -qE "$kv" report.txt && ok || bad "text summary: no '$kv'"
done
"$reconcile" --problems manifest.jsonl rx-old.log.gz rx-mid.log rx-new.log > problems.txt
grep -qE '^delivered ' problems.txt && bad "--problems lists delivered files" || ok
grep -qE '^failed .*a/lost.bin' problems.txt && ok || bad "--problems leaves out a failure"
grep -qE 'delivered  *8' problems.txt && ok || bad "--problems: the summary counts all"
"$reconcile" --only-manifest-sessions manifest.jsonl rx-old.log.gz rx-mid.log rx-new.log > only.txt
grep -q 'd/other.txt' only.txt && bad "--only-manifest-sessions lists session D" || ok
grep -q 'x/extra.txt' only.txt && ok || bad "--only-manifest-sessions leaves out x/extra.txt"

# All delivered: exit 0. Names that are not UTF-8 match: the manifest's json_quote escapes the
# byte 0xE9 as \u00e9, the text log holds the byte itself.
{
  m $A 1 a/ok.txt 5 0x6999CF78
  m $A 2 'caf\u00e9.txt' 3 0x0000CAFE
  m $A 3 'b/\u00ff\u00fe.bin' 3 null
} > good.jsonl
{
  echo "Info: sender session $A started"
  file_line a/ok.txt 5 "Key: 0x6999CF78, B2B Passed"
  printf 'File: caf\xe9.txt, Trans: 3 (bytes), Time: 00:00:00.010, Rate: 1.000 (MB/s), Key: 0x0000CAFE, B2B Passed\n'
  printf 'File: b/\xff\xfe.bin, Trans: 3 (bytes), Time: 00:00:00.010, Rate: 1.000 (MB/s), Key: none, NONE Not verified\n'
} | ts 11/22-10:00:00 > good.log
"$reconcile" good.jsonl good.log > good.txt
expect "all delivered: exit status" 0 "$?"
grep -qE 'delivered  *3' good.txt && ok || bad "all delivered: $(cat good.txt)"
: > empty.jsonl
"$reconcile" empty.jsonl good.log > empty.txt
expect "empty manifest: exit status" 0 "$?"
grep -qE 'not in manifest  *3' empty.txt && ok || bad "empty manifest: $(cat empty.txt)"

# --- 4. Bad input: exit 2, one line naming the file (and line), no report.
bad_input() {  # bad_input NAME EXPECTED-STDERR-PART ARGS...
  local name=$1 want=$2
  shift 2
  "$reconcile" "$@" > out.txt 2> err.txt
  expect "$name: exit status" 2 "$?"
  expect "$name: stdout" "" "$(cat out.txt)"
  expect "$name: stderr lines" 1 "$(wc -l < err.txt)"
  contains "$name: stderr" "$want" "$(cat err.txt)"
}
bad_input "missing manifest" "cannot read 'nope.jsonl': No such file or directory" \
  nope.jsonl rx-new.log
bad_input "missing log" "cannot read 'nope.log': No such file or directory" \
  manifest.jsonl rx-new.log nope.log
bad_input "a folder as log" "cannot read '.': Is a directory" manifest.jsonl .
{ head -n 2 manifest.jsonl; echo '{"session": "0f3c9a7d12e45b60", "path": '; tail -n 3 manifest.jsonl; } \
  > broken.jsonl
bad_input "manifest line not JSON" "broken.jsonl:3: not valid JSON" broken.jsonl rx-new.log
{ head -n 4 manifest.jsonl; echo '{"session":"0f3c9a7d12e45b60","status":"sent"}'; } > nopath.jsonl
bad_input "manifest line without path" "nopath.jsonl:5: no \"path\" string" nopath.jsonl rx-new.log
echo '["a list"]' > list.jsonl
bad_input "manifest line not an object" "list.jsonl:1: not a JSON object" list.jsonl rx-new.log
m XYZ 1 a 1 null > badsession.jsonl
bad_input "bad session" "badsession.jsonl:1: \"session\" is not 16 lower-case hex digits" \
  badsession.jsonl rx-new.log
m $A 1 a 1 0x123 > badkey.jsonl
bad_input "bad key" "badkey.jsonl:1: \"key\" is neither null nor 0x and 8 hex digits" \
  badkey.jsonl rx-new.log
{ head -n 2 rx-new.json; echo 'not json'; tail -n 2 rx-new.json; } > badlog.json
bad_input "JSON log line not JSON" "badlog.json:3: not a JSON log line" manifest.jsonl badlog.json
head -c 60 rx-old.log.gz > cut.log.gz
bad_input "damaged gz" "cannot read 'cut.log.gz'" manifest.jsonl cut.log.gz
if [[ $(id -u) -ne 0 ]]; then
  cp rx-new.log locked.log && chmod 000 locked.log
  bad_input "unreadable log" "cannot read 'locked.log': Permission denied" manifest.jsonl locked.log
fi
"$reconcile" manifest.jsonl > /dev/null 2> err.txt
expect "no log given: exit status" 2 "$?"
contains "no log given" "RECEIVE_LOG" "$(cat err.txt)"
"$reconcile" --help > help.txt
expect "--help: exit status" 0 "$?"
for word in SEND_MANIFEST RECEIVE_LOG --json --log-format --problems "Exit status" "not in manifest" \
  "never seen" "not sent" unfinished filtered refused "key mismatch" .gz; do
  grep -q -- "$word" help.txt && ok || bad "--help does not mention $word"
done

# --- 5. A receiver killed and restarted mid-session. Session F's a/late.bin was being committed
#        when session E replaced F; E sent a/late.bin too. The receiver was killed with E's
#        a/late.bin and a/lead.bin half-written, F's a/late.bin renamed into place but not logged,
#        and E's a/twice.bin logged Passed but not recorded as such in its journal.
E=e0e0e0e0e0e0e0e0
F=f0f0f0f0f0f0f0f0
{
  m $F 1 k/late.bin 200 0x0000F001
  m $E 1 k/lead.bin 4000 0x0000E001
  m $E 2 k/twice.bin 100 0x0000E002
  m $E 3 k/late.bin 200 0x0000E003
  m $E 4 k/joined.bin 3000000 0x0000E004
  m $E 5 k/never.bin 500 0x0000E005
  m $E 6 k/open.bin 9000 0x0000E006
} > crash.jsonl
found() {  # found PATH SESSION ID GOT SIZE RECORD: the FAILED line of a file found at start-up
  echo "Error: $1 FAILED: the receiver stopped (crash, kill or power cut) while the file was being received; found at start-up (session $2, file $3); received $4 of $5 bytes; missing bytes 1000-4000 (as far as known); partial data removed; record: $rec/$6"
}
recovered() {  # recovered PATH SESSION ID
  echo "Info: $1: delivered by an earlier run of the receiver (session $2, file $3), which stopped before logging it; synced now"
}
joined() { echo "Info: $1, Size: $2 (bytes) . . . receiving (joined mid-file: its first packets went before this receiver started)"; }
{
  start
  echo "Info: sender session $F started"
  announce k/late.bin 200
  echo "Info: sender session $E started"
  announce k/lead.bin 4,000
  announce k/twice.bin 100
  file_line k/twice.bin 100 "Key: 0x0000E002, B2B Passed"
  announce k/late.bin 200
  # Killed. The next run, before its start line:
  recovered k/twice.bin $E 2
  file_line k/twice.bin 100 "Key: 0x0000E002, B2B Passed"
  recovered k/late.bin $F 1
  file_line k/late.bin 200 "Key: 0x0000F001, B2B Passed"
  recovered k/ghost.bin $E 99
  file_line k/ghost.bin 7 "Key: 0x0000E099, B2B Passed"
  found k/lead.bin $E 1 1,000 4,000 lead1.json
  found k/late.bin $E 3 0 200 late.json
  # Its start line comes once its threads run: after the first line of the session under way.
  echo "Info: sender session $E started"
  start
  joined k/joined.bin 3,000,000
  echo "Error: k/joined.bin FAILED: started before this receiver: bytes 0-1048576 missing (the sender went on to the next file before this one was complete: data lost); received 1,951,424 of 3,000,000 bytes; missing bytes 0-1048576; record: $rec/joined.json"
  echo "Error: k/never.bin FAILED: never announced: all its packets were lost; received 0 of 500 bytes; missing bytes 0-500; record: $rec/never.json"
  joined k/open.bin 9,000
  # Killed again; this run names a/lead.bin a second time (a receiver bug the report must show).
  found k/lead.bin $E 1 1,000 4,000 lead2.json
  start
} | ts 11/23-10:00:00 > crash.log
"$reconcile" --json crash.jsonl crash.log > crash.json 2> err.txt
expect "crash: exit status" 1 "$?"
expect "crash: stderr" "" "$(cat err.txt)"
check_c() { local got; got=$(outcome_of crash.json "$1" "$2"); [[ "$got" == "$3"* ]] && ok || bad "crash: $2 ($1): expected '$3...', got '$got'"; }
check_c $F k/late.bin "delivered|key 0x0000F001|delivered by an earlier run of the receiver, synced at its restart (crash.log:"
check_c $E k/late.bin "failed|the receiver stopped (crash, kill or power cut) while the file was being received; found at start-up (session $E, file 3); received 0 of 200 bytes; missing bytes 1000-4000 (as far as known); partial data removed; record: $rec/late.json|"
check_c $E k/twice.bin "delivered|key 0x0000E002|logged Passed again at the receiver's restart (crash.log:10): the run that delivered it stopped before recording that it had"
check_c $E k/lead.bin "failed|the receiver stopped (crash, kill or power cut) while the file was being received; found at start-up (session $E, file 1); received 1,000 of 4,000 bytes; missing bytes 1000-4000 (as far as known); partial data removed; record: $rec/lead1.json|named failed again at start-up (crash.log:23): the receiver stopped"
check_c $E k/joined.bin "failed|started before this receiver: bytes 0-1048576 missing (the sender went on to the next file before this one was complete: data lost); received 1,951,424 of 3,000,000 bytes; missing bytes 0-1048576; record: $rec/joined.json|"
check_c $E k/never.bin "failed|never announced: all its packets were lost; received 0 of 500 bytes; missing bytes 0-500; record: $rec/never.json|"
check_c $E k/open.bin "unfinished|announced, no outcome after it in the logs given|"
check_c $E k/ghost.bin "not in manifest||"
summary=$(tail -n 1 crash.json)
for kv in '"delivered": 2,' '"failed": 4,' '"unfinished": 1,' '"not in manifest": 1}' \
  '"unmatched_in_logs": {"failed": 0,'; do
  contains "crash: summary" "$kv" "$summary"
done
# The same in JSON log lines.
to_json crash.log > crash-log.json
"$reconcile" --json crash.jsonl crash-log.json > crash-jl.json
expect "crash: json logs give the report of the text log" \
  "$(sed -E 's/"log": "[^"]*"|crash(-log)?\.(log|json):[0-9]+//g' crash.json)" \
  "$(sed -E 's/"log": "[^"]*"|crash(-log)?\.(log|json):[0-9]+//g' crash-jl.json)"
# --problems leaves out the file logged Passed twice: it was delivered once.
"$reconcile" --problems crash.jsonl crash.log > crash.txt
grep -q 'k/twice.bin' crash.txt && bad "crash: --problems lists k/twice.bin: $(cat crash.txt)" || ok

# --- 6. Several manifests and several receivers: two host pairs (dd_file_send --shard 0/2 and
#        1/2), whose sessions P and Q each drive lanes to receivers A and B. Receiver A's log is
#        rotated (given newest first); B restarts while A is still receiving session P, which a
#        single stream of both would take as the end of P.
P=5050505050505050
Q=7171717171717171
{
  m $P 1 p/ok-a.txt 5 0x0000A001
  m $P 2 p/ok-b.txt 6 0x0000A002
  m $P 3 p/fail-a.bin 700 0x0000A003
  m $P 4 p/both.bin 800 0x0000A004
  m $P 5 p/ghost.bin 9 0x0000A005
  m $P 6 p/late.txt 10 0x0000A006
} > shard0.jsonl
{
  m $Q 1 q/ok.txt 11 0x0000B001
  m $Q 2 q/mismatch.txt 12 0x0000B002
  m $Q 3 q/half.bin 1300 0x0000B003
  m $Q 0 q/unread.txt 0 null failed "cannot read '/data/q/unread.txt': Permission denied"
} > shard1.jsonl
{
  start
  echo "Info: sender session $P started"
  announce p/ok-a.txt 5
  file_line p/ok-a.txt 5 "Key: 0x0000A001, B2B Passed"
  announce p/fail-a.bin 700
} | ts 11/24-09:00:00 > rx-a.log.1
touch -d '2026-11-24 09:00:30' rx-a.log.1
{
  echo "Error: p/fail-a.bin FAILED: no packet for 5.0 s: the sender stopped or the link went down before the file's end; received 100 of 700 bytes; missing bytes 100-700; record: $rec/a-fail.json" | ts 11/24-09:01:00
  announce p/both.bin 800 | ts 11/24-09:01:01
  echo "Error: p/both.bin FAILED: no packet for 5.0 s: the sender stopped or the link went down before the file's end; received 0 of 800 bytes; missing bytes 0-800; record: $rec/a-both.json" | ts 11/24-09:01:10
  { announce p/late.txt 10; file_line p/late.txt 10 "Key: 0x0000A006, B2B Passed"; } | ts 11/24-09:03:00
} > rx-a.log
touch -d '2026-11-24 09:04:00' rx-a.log
{
  {
    start
    echo "Info: sender session $P started"
    announce p/ok-b.txt 6
    file_line p/ok-b.txt 6 "Key: 0x0000A002, B2B Passed"
    announce p/both.bin 800
    file_line p/both.bin 800 "Key: 0x0000A004, B2B Passed"
  } | ts 11/24-09:00:05
  start | ts 11/24-09:02:00
  {
    echo "Info: sender session $Q started"
    announce q/ok.txt 11
    file_line q/ok.txt 11 "Key: 0x0000B001, B2B Passed"
    announce q/mismatch.txt 12
    file_line q/mismatch.txt 12 "Key: 0x0BADBAD0, B2B Passed"
    announce x/stray.txt 3
    file_line x/stray.txt 3 "Key: 0x0000EEEE, B2B Passed"
    announce q/half.bin 1,300
  } | ts 11/24-09:02:05
} > rx-b.log
touch -d '2026-11-24 09:04:00' rx-b.log

# outcome_rx JSON SESSION PATH: "outcome|receiver|detail|notes" of that line in --json output.
outcome_rx() {
  python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("session") == sys.argv[2] and r.get("path") == sys.argv[3]:
        print(r["outcome"] + "|" + str(r["receiver"]) + "|" + r["detail"] + "|" + "; ".join(r["notes"]))
' "$@"
}
"$reconcile" --json --manifest shard0.jsonl --manifest shard1.jsonl \
  --receiver rx-a.log,rx-a.log.1 --receiver rx-b.log > multi.json 2> err.txt
expect "several receivers: exit status" 1 "$?"
expect "several receivers: stderr" "" "$(cat err.txt)"
check_m() { local got; got=$(outcome_rx multi.json "$1" "$2"); [[ "$got" == "$3"* ]] && ok || bad "several receivers: $2 ($1): expected '$3...', got '$got'"; }
check_m $P p/ok-a.txt "delivered|rx-a.log|key 0x0000A001|"
check_m $P p/ok-b.txt "delivered|rx-b.log|key 0x0000A002|"
check_m $P p/fail-a.bin "failed|rx-a.log|no packet for 5.0 s: the sender stopped or the link went down before the file's end; received 100 of 700 bytes; missing bytes 100-700; record: $rec/a-fail.json|"
check_m $P p/both.bin "delivered|rx-b.log|key 0x0000A004|also failed on receiver rx-a.log (rx-a.log:3): no packet for 5.0 s"
check_m $P p/ghost.bin "never seen|None||"
check_m $P p/late.txt "delivered|rx-a.log|key 0x0000A006|"
check_m $Q q/ok.txt "delivered|rx-b.log|key 0x0000B001|"
check_m $Q q/mismatch.txt "key mismatch|rx-b.log|manifest key 0x0000B002, receive log key 0x0BADBAD0|"
check_m $Q q/half.bin "unfinished|rx-b.log|announced, no outcome after it in the logs given|"
check_m $Q q/unread.txt "not sent|None|cannot read '/data/q/unread.txt': Permission denied|"
check_m $Q x/stray.txt "not in manifest|rx-b.log||"
summary=$(tail -n 1 multi.json)
for kv in '"delivered": 5' '"key mismatch": 1' '"failed": 1' '"unfinished": 1' '"never seen": 1' \
  '"not sent": 1' '"not in manifest": 1' '"files": 10' '"exit": 1' \
  '"receivers": ["rx-a.log", "rx-b.log"]'; do
  contains "several receivers: summary" "$kv" "$summary"
done
# The text report names the receiver of each row in a column of its own.
"$reconcile" --manifest shard0.jsonl --manifest shard1.jsonl --receiver rx-a.log,rx-a.log.1 \
  --receiver rx-b.log > multi.txt
expect "several receivers: text exit status" 1 "$?"
expect "several receivers: text header" \
  "OUTCOME          SESSION           PATH            RECEIVER  DETAIL" "$(head -n 1 multi.txt)"
grep -qE "^failed +$P +p/fail-a.bin +rx-a.log +no packet for 5.0 s" multi.txt && ok ||
  bad "several receivers: the failed row names receiver A: $(cat multi.txt)"
grep -qE "^never seen +$P +p/ghost.bin +- *$" multi.txt && ok ||
  bad "several receivers: the never seen row: $(cat multi.txt)"
contains "several receivers: text summary" \
  "Summary: 10 file(s) in 2 manifest(s), 2 receiver(s): rx-a.log, rx-b.log" "$(cat multi.txt)"
# Positional logs alongside --manifest are one receiver, first; the outcomes stay the same.
"$reconcile" --json --manifest shard0.jsonl --manifest shard1.jsonl --receiver rx-b.log \
  rx-a.log.1 rx-a.log > mixed.json
expect "mixed forms: p/both.bin" "delivered|rx-b.log|key 0x0000A004|also failed on receiver rx-a.log.1 (rx-a.log:3): no packet for 5.0 s: the sender stopped or the link went down before the file's end; received 0 of 800 bytes; missing bytes 0-800; record: $rec/a-both.json" \
  "$(outcome_rx mixed.json $P p/both.bin)"
expect "mixed forms: p/fail-a.bin" "failed|rx-a.log.1" "$(outcome_rx mixed.json $P p/fail-a.bin | cut -d'|' -f1-2)"
# One receiver given with the flags is the positional form: the same report, no receiver named.
"$reconcile" --json --manifest manifest.jsonl --receiver rx-new.log,rx-old.log.gz,rx-mid.log \
  > flags.json
expect "one receiver by flags: the positional form's report" "$(cat report.json)" "$(cat flags.json)"
"$reconcile" --manifest manifest.jsonl --receiver rx-old.log.gz,rx-mid.log,rx-new.log > flags.txt
expect "one receiver by flags: the positional form's text" "$(cat report.txt)" "$(cat flags.txt)"
# Bad input as ever: one line, exit 2, no report.
bad_input "--receiver naming a missing log" "cannot read 'nope.log': No such file or directory" \
  --manifest shard0.jsonl --receiver rx-a.log --receiver rx-b.log,nope.log
bad_input "--receiver with an empty name" "--receiver 'rx-b.log,': an empty log name" \
  --manifest shard0.jsonl --receiver rx-a.log --receiver rx-b.log,
bad_input "a log given for two receivers" "'rx-a.log' is given twice" \
  --manifest shard0.jsonl --receiver rx-a.log --receiver rx-b.log,rx-a.log
bad_input "a manifest given twice" "'shard0.jsonl' is given twice" \
  --manifest shard0.jsonl --manifest shard0.jsonl --receiver rx-a.log
bad_input "--manifest missing" "cannot read 'nope.jsonl': No such file or directory" \
  --manifest shard0.jsonl --manifest nope.jsonl --receiver rx-a.log
"$reconcile" --manifest shard0.jsonl > /dev/null 2> err.txt
expect "--manifest without a receiver: exit status" 2 "$?"
contains "--manifest without a receiver" "RECEIVE_LOG (or --receiver LOG[,LOG...])" "$(cat err.txt)"
"$reconcile" --receiver rx-a.log > /dev/null 2> err.txt
expect "no manifest: exit status" 2 "$?"
contains "no manifest" "SEND_MANIFEST (or --manifest FILE)" "$(cat err.txt)"
"$reconcile" --help > help.txt
for word in --manifest --receiver "LOG[,LOG...]" "several receivers"; do
  grep -q -- "$word" help.txt && ok || bad "--help does not mention $word"
done

echo "$pass passed, $failures failed"
((failures == 0))
