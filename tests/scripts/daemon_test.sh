#!/usr/bin/env bash
# dd_file_receive as a daemon: the launcher runs it at the configured nice and ionice values,
# SIGHUP reopens the log file (logrotate), SIGTERM stops it with status 0; the systemd unit
# passes systemd-analyze verify when systemd is there.
# Usage: daemon_test.sh LAUNCHER UNIT DD_FILE_SEND DD_FILE_RECEIVE
set -uo pipefail
launcher=$1 unit=$2 send_bin=$3 recv_bin=$4
work=$(mktemp -d)
trap 'kill $rx 2>/dev/null; rm -rf "$work"' EXIT
pass=0 failures=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
expect() { if [[ "$2" == "$3" ]]; then ok; else bad "$1: expected '$2', got '$3'"; fi; }

mkdir -p "$work/out" "$work/src"
port=$((40000 + RANDOM % 20000))
if [[ $(id -u) -eq 0 ]]; then nice_value=-7; else nice_value=5; fi
DDFT_NICE=$nice_value DDFT_IONICE_CLASS=2 DDFT_IONICE_LEVEL=3 DD_FILE_RECEIVE="$recv_bin" \
  DDFT_RECEIVE_CONF=/nonexistent "$launcher" --listen "127.0.0.1:$port" --output "$work/out" \
  --buffer-mb 128 --log-file "$work/receive.log" --quiet &
rx=$!
for _ in $(seq 100); do grep -q "receiving on" "$work/receive.log" 2>/dev/null && break; sleep 0.1; done
grep -q "receiving on" "$work/receive.log" || bad "the daemon did not start"

# exec keeps the PID: it is dd_file_receive itself, at the configured priorities.
expect "process" "dd_file_receive" "$(cat /proc/$rx/comm)"
expect "nice" "$nice_value" "$(awk '{print $19}' /proc/$rx/stat)"
expect "ionice" "best-effort: prio 3" "$(ionice -p $rx)"

# logrotate: move the file away, SIGHUP, the daemon writes to a new file of the same name.
mv "$work/receive.log" "$work/receive.log.1"
kill -HUP $rx
for _ in $(seq 50); do [[ -f "$work/receive.log" ]] && break; sleep 0.1; done
head -c 4000 /dev/urandom > "$work/src/after-rotate.bin"
"$send_bin" "$work/src/after-rotate.bin" --dest "127.0.0.1:$port" > "$work/send.log" 2>&1 ||
  bad "send after rotation"
for _ in $(seq 50); do grep -q "File: after-rotate.bin" "$work/receive.log" 2>/dev/null && break; sleep 0.1; done
grep -q "SIGHUP: log file reopened" "$work/receive.log" && ok || bad "no reopen line in the new log"
grep -q "File: after-rotate.bin.*B2B Passed" "$work/receive.log" && ok || bad "new log lacks the transfer"
grep -q "receiving on" "$work/receive.log.1" && ok || bad "rotated log lost its lines"
grep -q "after-rotate" "$work/receive.log.1" && bad "rotated log still written" || ok

# While the daemon holds its port, a second receiver on it: a bad output folder is named before
# the port is tried (CI once failed on a port taken by another job), a good one names the port.
out=$("$recv_bin" --listen "127.0.0.1:$port" --output "$work/none" --buffer-mb 128 2>&1)
expect "bad folder on a busy port: status" 1 "$?"
[[ "$out" == *"output folder '$work/none' cannot be used"* && "$out" != *"cannot listen"* ]] && ok ||
  bad "bad folder on a busy port: $out"
mkdir -p "$work/out2"
out=$("$recv_bin" --listen "127.0.0.1:$port" --output "$work/out2" --buffer-mb 128 2>&1)
expect "busy port: status" 1 "$?"
[[ "$out" == *"cannot listen on 127.0.0.1:$port: Address already in use"* ]] && ok ||
  bad "busy port: $out"
[[ $(echo "$out" | grep -c .) -eq 1 ]] && ok || bad "busy port: more than one line: $out"
# The daemon's own folder, on another port: taken (a second receiver's start-up sweep would move
# the daemon's files in flight), named in one line, nothing touched.
out=$("$recv_bin" --listen "127.0.0.1:0" --output "$work/out" --buffer-mb 128 2>&1)
expect "folder in use: status" 1 "$?"
[[ "$out" == *"output folder '$work/out' is in use by another dd_file_receive"* &&
  $(echo "$out" | grep -c .) -eq 1 ]] && ok || bad "folder in use: $out"

kill -TERM $rx
wait $rx
expect "SIGTERM exit status" 0 "$?"

# Bad settings: one line, status 2, nothing started.
out=$(DDFT_NICE=lots "$launcher" --help 2>&1)
expect "bad nice status" 2 "$?"
[[ "$out" == "dd_file_receive_daemon: DDFT_NICE must be"* ]] && ok || bad "bad nice message: $out"

# The systemd unit, with ExecStart pointed at this build's binary.
if command -v systemd-analyze > /dev/null; then
  sed "s|/usr/bin/dd_file_receive|$recv_bin|" "$unit" > "$work/dd_file_receive.service"
  out=$(systemd-analyze verify "$work/dd_file_receive.service" 2>&1)
  expect "systemd-analyze verify status" 0 "$?"
  [[ -z "$out" ]] && ok || bad "systemd-analyze: $out"
fi

echo "$pass passed, $failures failed"
((failures == 0))
