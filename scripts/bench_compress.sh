#!/usr/bin/env bash
# Compression: what --compress buys on a link slower than the disks. Loopback, paced
# at --rate (default 100 MiB/s, a 1 Gb/s diode), into dd_file_receive --sink null (so the link,
# not this machine's disk, is what is measured; the receiver still decompresses and verifies
# every file).
#
#   bash scripts/bench_compress.sh [--smoke] [--runs N] [--size SIZE] [--rate MB/s] [--dir DIR]
#   (also run as: bash scripts/bench.sh --compress [the same options])
#
# Two corpora of SIZE (default 2G) in 8 files each, made once and kept in DIR: text (logs, CSV
# and XML from scripts/make_text_corpus.py's fixed seed) and random bytes (seeded, so every run
# sends the same). Settings: text with --compress off, zstd, auto, and auto with 256 KiB blocks;
# random with off, auto and zstd. Each figure is the median of --runs runs (default 3),
# interleaved setting by setting. Reported per setting: seconds from the sender's start to its
# exit (every file sent; the receiver's log must show every file Passed), MiB/s of file bytes,
# the speed-up against "off" of the same corpus, the bytes on the wire, and each program's
# CPU-seconds per GiB of file bytes.
# Targets (not in --smoke): text with auto at least 3x sooner than off; random with auto at most
# 3% slower than off. Writes DIR/compress.json.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=3 size=2G rate=100 dir="$repo/bench-work" smoke=0
while (($#)); do
  case "$1" in
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --smoke) smoke=1 runs=1 size=48M ;;
    --runs) runs=$2; shift ;;
    --size) size=$2; shift ;;
    --rate) rate=$2; shift ;;
    --dir) dir=$2; shift ;;
    *) echo "bench_compress.sh: unknown argument '$1' (see the header of the script)" >&2; exit 2 ;;
  esac
  shift
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "bench_compress.sh: --runs must be a positive number" >&2; exit 2; }
size_bytes=$(numfmt --from=iec "$size") || { echo "bench_compress.sh: bad --size '$size'" >&2; exit 2; }
if [[ "${DDFT_BENCH_NO_BUILD:-0}" != 1 ]]; then bash "$repo/scripts/build.sh" > /dev/null; fi
bin=${DDFT_BENCH_BIN:-$repo/build/bin}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
results=$dir/compress.tsv
: > "$results"

# The corpora, made once per size (a stamp file says it is whole).
text=$dir/corpus-text-$size random=$dir/corpus-random-$size
if [[ ! -f "$text/.whole" ]]; then
  rm -rf "$text"
  python3 "$repo/scripts/make_text_corpus.py" "$text" "$((size_bytes / 1048576))" --files 8
  touch "$text/.whole"
fi
if [[ ! -f "$random/.whole" ]]; then
  rm -rf "$random"
  mkdir -p "$random"
  python3 - "$random" "$((size_bytes / 8))" << 'PY'
import random, sys
d, n = sys.argv[1], int(sys.argv[2])
for i in range(8):
    rng = random.Random(20261126 + i)
    with open(f"{d}/random-{i}.bin", "wb") as f:
        left = n
        while left:
            k = min(left, 1 << 24)
            f.write(rng.randbytes(k))
            left -= k
PY
  touch "$random/.whole"
fi

# One transfer of corpus CORPUS with sender options OPTS...; appends
# "corpus setting seconds bytes wire_bytes tx_cpu rx_cpu ok" to the results.
transfer() {  # transfer CORPUS SETTING OPTS...
  local corpus=$1 setting=$2
  shift 2
  local src=$text
  [[ $corpus == random ]] && src=$random
  local port=$((30000 + RANDOM % 25000))
  rm -f "$dir/compress-receive.log" "$dir/compress-send.log"
  /usr/bin/time -f '%U %S' -o "$dir/compress-rx.time" "$bin/dd_file_receive" \
    --listen "127.0.0.1:$port" --output "$dir" --sink null --once --quiet --buffer-mb 512 \
    --log-file "$dir/compress-receive.log" &
  local rx=$!
  for _ in $(seq 200); do
    grep -q "receiving on" "$dir/compress-receive.log" 2> /dev/null && break
    sleep 0.05
  done
  local tx_rc=0 rx_rc=0 t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f '%U %S' -o "$dir/compress-tx.time" "$bin/dd_file_send" "$src/" \
    --exclude .whole --dest "127.0.0.1:$port" --rate "$rate" --log-file "$dir/compress-send.log" \
    "$@" > /dev/null || tx_rc=$?
  t1=$(date +%s%N)
  ((tx_rc == 0)) || kill "$rx" 2> /dev/null || true
  wait "$rx" || rx_rc=$?
  python3 - "$dir" "$corpus" "$setting" "$(((t1 - t0) / 1000))" "$((tx_rc | rx_rc))" >> "$results" << 'PY'
import re, sys
d, corpus, setting, us, rc = sys.argv[1:6]
rx = open(f"{d}/compress-receive.log").read()
tx = open(f"{d}/compress-send.log").read()
passed = len(re.findall(r" Passed", rx))
m = re.search(r"done: \d+ file\(s\) sent, \d+ failed, ([0-9,]+) bytes", tx)
nbytes = int(m.group(1).replace(",", "")) if m else 0
z = re.search(r"data sent as ([0-9,]+)", tx)
wire = int(z.group(1).replace(",", "")) if z else nbytes
def cpu(name):
    u, s = open(f"{d}/compress-{name}.time").read().split()[-2:]
    return float(u) + float(s)
ok = 1 if (int(rc) == 0 and passed == 8) else 0
print(corpus, setting, int(us) / 1e6, nbytes, wire, cpu("tx"), cpu("rx"), ok, sep="\t")
PY
}

echo "bench_compress: $size per corpus, --rate $rate, $runs run(s)" >&2
for ((r = 0; r < runs; ++r)); do
  transfer text off --compress off
  transfer text zstd --compress zstd
  transfer text auto --compress auto
  transfer text auto-256k --compress auto --read-block-kb 256
  transfer random off --compress off
  transfer random auto --compress auto
  transfer random zstd --compress zstd
done

python3 - "$results" "$dir/compress.json" "$smoke" << 'PY'
import json, statistics, sys
rows = [l.split("\t") for l in open(sys.argv[1]).read().splitlines() if l]
smoke = sys.argv[3] == "1"
cells = {}
for corpus, setting, secs, nbytes, wire, tx, rx, ok in rows:
    c = cells.setdefault((corpus, setting), {"s": [], "tx": [], "rx": [], "wire": [], "ok": 0,
                                              "runs": 0, "bytes": int(nbytes)})
    gib = max(int(nbytes), 1) / 2**30
    c["s"].append(float(secs))
    c["tx"].append(float(tx) / gib)
    c["rx"].append(float(rx) / gib)
    c["wire"].append(int(wire))
    c["ok"] += int(ok)
    c["runs"] += 1
order = [("text", "off"), ("text", "zstd"), ("text", "auto"), ("text", "auto-256k"),
         ("random", "off"), ("random", "auto"), ("random", "zstd")]
print(f"{'corpus':<8}{'setting':<11}{'seconds':>9}{'MiB/s':>9}{'vs off':>8}{'data/wire':>11}"
      f"{'tx CPU-s/GiB':>14}{'rx CPU-s/GiB':>14}{'ok':>6}")
out, failures = {}, []
for key in order:
    if key not in cells:
        continue
    c = cells[key]
    secs = statistics.median(c["s"])
    off = statistics.median(cells[(key[0], "off")]["s"])
    mib_s = c["bytes"] / 2**20 / secs
    speedup = off / secs
    shrink = c["bytes"] / max(statistics.median(c["wire"]), 1)
    tx, rx = statistics.median(c["tx"]), statistics.median(c["rx"])
    print(f"{key[0]:<8}{key[1]:<11}{secs:>9.2f}{mib_s:>9.1f}{speedup:>8.2f}{shrink:>11.2f}"
          f"{tx:>14.3f}{rx:>14.3f}{c['ok']:>4}/{c['runs']}")
    out[f"{key[0]}-{key[1]}"] = {"seconds": secs, "mib_s": mib_s, "speedup_vs_off": speedup,
                                  "data_over_wire": shrink, "tx_cpu_s_per_gib": tx,
                                  "rx_cpu_s_per_gib": rx, "ok_runs": c["ok"], "runs": c["runs"]}
    if c["ok"] != c["runs"]:
        failures.append(f"{key[0]} {key[1]}: {c['runs'] - c['ok']} run(s) did not pass every file")
if not smoke:
    t = out.get("text-auto", {}).get("speedup_vs_off", 0)
    r = out.get("random-auto", {}).get("speedup_vs_off", 0)
    if t < 3:
        failures.append(f"text with --compress auto {t:.2f}x sooner than off (target 3)")
    if r < 1 / 1.03:
        failures.append(f"random with --compress auto {1 / r:.3f}x the time of off (target 1.03)")
json.dump(out, open(sys.argv[2], "w"), indent=2)
for f in failures:
    print("bench_compress: target missed:", f, file=sys.stderr)
sys.exit(1 if failures else 0)
PY
