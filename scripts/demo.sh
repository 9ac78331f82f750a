#!/usr/bin/env bash
# Does all set-up, builds the two programs it runs, and runs a demo transfer on loopback:
# dd_file_receive listens on 127.0.0.1, dd_file_send sends a generated folder of files, then the
# receive log is shown and every file is compared with its source. The build is scripts/build.sh's
# (the same settings), so a later full build there reuses what this one compiled.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bash "$repo/scripts/build.sh" --target dd_file_send --target dd_file_receive
bin="$repo/build/bin"
demo=${DDFT_DEMO_DIR:-$repo/demo}
port=${DDFT_DEMO_PORT:-47555}

rm -rf "$demo"
mkdir -p "$demo/outbox/reports/2026" "$demo/outbox/images" "$demo/inbox"
echo "demo: generating the folder to send in $demo/outbox"
for i in $(seq 1 20); do
  head -c $((i * 4099)) /dev/urandom > "$demo/outbox/reports/2026/report-$i.csv"
done
for i in 1 2 3; do head -c $((i * 3 * 1048576)) /dev/urandom > "$demo/outbox/images/scan-$i.img"; done
head -c $((150 * 1048576)) /dev/urandom > "$demo/outbox/archive.bin"   # shows a Rcvd: line
: > "$demo/outbox/empty.flag"

echo "demo: starting dd_file_receive on 127.0.0.1:$port"
"$bin/dd_file_receive" --listen "127.0.0.1:$port" --output "$demo/inbox" --buffer-mb 256 \
  --once --quiet --log-file "$demo/receive.log" &
rx=$!
trap 'kill $rx 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do grep -q "receiving on" "$demo/receive.log" 2>/dev/null && break; sleep 0.1; done

echo "demo: sending with dd_file_send"
"$bin/dd_file_send" "$demo/outbox" --dest "127.0.0.1:$port" --log-file "$demo/send.log" --quiet
rc=0
wait $rx || rc=$?
trap - EXIT

echo
echo "=== receive log ($demo/receive.log) ==="
cat "$demo/receive.log"
echo
echo "=== verification: every file compared byte for byte with its source ==="
if diff -r "$demo/outbox" "$demo/inbox/outbox" && [[ $rc -eq 0 ]]; then
  n=$(find "$demo/outbox" -type f | wc -l)
  echo "VERIFIED: all $n files arrived whole and identical (receiver exit status $rc)"
else
  echo "FAILED: the received tree differs from the source, or the receiver reported a failure"
  exit 1
fi
