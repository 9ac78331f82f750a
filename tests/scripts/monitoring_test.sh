#!/usr/bin/env bash
# The monitoring files the package installs, and the logrotate file, checked with the tools that
# will read them:
#   1. packaging/monitoring/ddft-alerts.yml: promtool check rules, and promtool test rules against
#      tests/scripts/monitoring/ddft-alerts_test.yml (each alert fires on what it is about, and
#      only then); a broken copy must fail the check (the check can fail);
#   2. packaging/ddft.logrotate: logrotate -d on a copy with its folder and user replaced (the
#      ddft user exists only where the package is installed); a broken copy must fail;
#   3. packaging/monitoring/ddft-dashboard.json: valid JSON (python3 -m json.tool), with a query
#      in every panel;
#   4. every ddft_* metric the rules and the dashboard name is one the programs export: read from
#      the /metrics of a real dd_file_receive and dd_file_send on loopback (a renamed metric
#      fails here).
# A part whose tool is missing is skipped with a line saying so; the test then exits 77 (skipped)
# unless a part failed. scripts/setup.sh installs both tools (prometheus, logrotate).
# Usage: monitoring_test.sh REPO DD_FILE_SEND DD_FILE_RECEIVE
set -uo pipefail
repo=$1 send_bin=$2 recv_bin=$3
rules="$repo/packaging/monitoring/ddft-alerts.yml"
dashboard="$repo/packaging/monitoring/ddft-dashboard.json"
work=$(mktemp -d)
rx= tx=
cleanup() {
  [[ -n "$tx" ]] && kill "$tx" 2> /dev/null && wait "$tx" 2> /dev/null
  [[ -n "$rx" ]] && kill "$rx" 2> /dev/null && wait "$rx" 2> /dev/null
  rm -rf "$work"
}
trap cleanup EXIT
pass=0 failures=0 skips=0
ok() { pass=$((pass + 1)); }
bad() { failures=$((failures + 1)); echo "FAIL $*"; }
skip() { skips=$((skips + 1)); echo "SKIP $*"; }
expect() { if [[ "$2" == "$3" ]]; then ok; else bad "$1: expected '$2', got '$3'"; fi; }

# --- 1. The alert rules.
if command -v promtool > /dev/null; then
  out=$(promtool check rules "$rules" 2>&1)
  expect "promtool check rules: status" 0 "$?"
  [[ "$out" == *SUCCESS* && "$out" != *FAILED* ]] && ok || bad "promtool check rules: $out"
  out=$(cd "$repo/tests/scripts/monitoring" && promtool test rules ddft-alerts_test.yml 2>&1)
  expect "promtool test rules: status" 0 "$?"
  [[ "$out" == *SUCCESS* && "$out" != *FAILED* ]] && ok || bad "promtool test rules: $out"
  sed 's/ddft_receive_ring_fill_ratio > 0.8/ddft_receive_ring_fill_ratio >/' "$rules" \
    > "$work/broken-alerts.yml"
  promtool check rules "$work/broken-alerts.yml" > "$work/broken.log" 2>&1 &&
    bad "promtool check rules passed a broken expression: $(cat "$work/broken.log")" || ok
else
  skip "the alert rules: promtool is missing (scripts/setup.sh installs the prometheus package)"
fi

# --- 2. The logrotate file: the package's folder and user replaced by a temp folder and this
# user, as scripts/package_check.sh does before running it for real.
if command -v logrotate > /dev/null; then
  mkdir -p "$work/logs"
  chmod 750 "$work/logs"
  echo line > "$work/logs/dd_file_receive.log"
  user=$(id -un) group=$(id -gn)
  sed -e "s|/var/log/ddft|$work/logs|" -e "s/su ddft ddft/su $user $group/" \
    -e "s/create 0640 ddft ddft/create 0640 $user $group/" "$repo/packaging/ddft.logrotate" \
    > "$work/logrotate.conf"
  lr_check() {  # CONF: logrotate -d's output; status 1 on any error
    local out
    out=$(logrotate -d -s "$work/logrotate.state" "$1" 2>&1)
    local status=$?
    echo "$out"
    ((status == 0)) && ! grep -qi 'error' <<< "$out"
  }
  out=$(lr_check "$work/logrotate.conf")
  expect "logrotate -d: status and no error" 0 "$?"
  [[ "$out" == *"rotating pattern: $work/logs/*.log"* && "$out" == *"considering log $work/logs/dd_file_receive.log"* ]] &&
    ok || bad "logrotate -d did not read the rotation block: $out"
  sed 's/maxsize 100M/maxsize 100M\n\tnosuchdirective/' "$work/logrotate.conf" > "$work/broken.conf"
  lr_check "$work/broken.conf" > "$work/broken.log" &&
    bad "logrotate -d passed a broken file: $(cat "$work/broken.log")" || ok
else
  skip "the logrotate file: logrotate is missing (scripts/setup.sh installs it)"
fi

# --- 3. The dashboard's JSON, and the expressions of both files.
python3 - "$dashboard" "$rules" > "$work/names" 2> "$work/names.err" << 'EOF'
import json, re, sys
dashboard = json.load(open(sys.argv[1]))
exprs = []
panels = [p for p in dashboard["panels"] if p.get("type") != "row"]
for p in panels:
    targets = [t.get("expr", "") for t in p.get("targets", [])]
    if not targets or not all(targets):
        sys.exit(f"panel {p.get('title')!r} has a target without a query")
    exprs += targets
for v in dashboard.get("templating", {}).get("list", []):
    if v.get("type") == "query":
        exprs.append(v["definition"])
# The rules' expressions: every `expr:` with its folded continuation lines.
lines = open(sys.argv[2]).read().split("\n")
for i, line in enumerate(lines):
    m = re.match(r"^(\s*)expr:\s*(.*)$", line)
    if not m:
        continue
    text = [m.group(2)]
    for nxt in lines[i + 1:]:
        if not nxt.startswith(m.group(1) + "  "):
            break
        text.append(nxt)
    exprs.append(" ".join(text))
if len(panels) < 10 or len(exprs) < 20:
    sys.exit(f"only {len(panels)} panels and {len(exprs)} expressions found")
for name in sorted({n for e in exprs for n in re.findall(r"\bddft_[a-z0-9_]+", e)}):
    print(name)
EOF
expect "dashboard JSON and expressions read" 0 "$?"
[[ -s "$work/names.err" ]] && bad "$(cat "$work/names.err")"
out=$(python3 -m json.tool "$dashboard" 2>&1 > /dev/null)
expect "python3 -m json.tool ddft-dashboard.json" "" "$out"

# --- 4. The names against what real programs serve: a receiver, and a sender scraped during its
# EOF_DELAY (heartbeats keep its link alive meanwhile). The sender sends its file as a channel:
# it serves its ddft_send_channel_* families only with --channel.
scrape() {  # PORT FILE: /metrics into FILE, retried for 5 s
  for _ in $(seq 50); do
    curl -sf "http://127.0.0.1:$1/metrics" > "$2" 2> /dev/null && return 0
    sleep 0.1
  done
  return 1
}
free_port() { echo $((20000 + RANDOM % 30000)); }
mkdir -p "$work/out" "$work/src"
head -c 200000 /dev/urandom > "$work/src/a.bin"
port=$(free_port) rx_metrics=$(free_port) tx_metrics=$(free_port)
"$recv_bin" --listen "127.0.0.1:$port" --output "$work/out" --buffer-mb 128 --metrics \
  "127.0.0.1:$rx_metrics" --log-file "$work/rx.log" --quiet 2> "$work/rx.err" &
rx=$!
scrape "$rx_metrics" "$work/rx.metrics" ||
  bad "no /metrics from dd_file_receive: $(cat "$work/rx.err" "$work/rx.log" 2>&1)"
"$send_bin" --channel "mon:source=$work/src/a.bin" --dest "127.0.0.1:$port" --eof-delay 4000 \
  --metrics "127.0.0.1:$tx_metrics" > "$work/tx.log" 2>&1 &
tx=$!
scrape "$tx_metrics" "$work/tx.metrics" || bad "no /metrics from dd_file_send: $(cat "$work/tx.log")"
wait "$tx"
expect "dd_file_send status" 0 "$?"
tx=
scrape "$rx_metrics" "$work/rx.metrics" || bad "no /metrics from dd_file_receive after the send"
cat "$work/rx.metrics" "$work/tx.metrics" |
  sed -nE 's/^# TYPE ([a-z0-9_]+) .*/\1/p; s/^([a-z0-9_]+)[{ ].*/\1/p' | sort -u > "$work/served"
if [[ $(grep -c . "$work/served") -lt 30 ]]; then
  bad "too few metrics served: $(cat "$work/served")"
fi
missing=$(comm -23 "$work/names" "$work/served")
expect "metrics named in the rules and the dashboard that no program serves" "" "$missing"
expect "metric names checked" yes "$( (($(grep -c . "$work/names") >= 25)) && echo yes || echo no)"

echo "monitoring_test: $pass passed, $failures failed, $skips skipped"
((failures > 0)) && exit 1
((skips > 0)) && exit 77
exit 0
