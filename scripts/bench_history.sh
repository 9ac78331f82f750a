#!/usr/bin/env bash
# The cost on the wire of the sender's history (--state-dir, --history-repeat): a hot folder at
# --rate 100 fed (a) 100 files a second of 16 KB for --seconds (10), (b) one file a second of
# 100 MB for --big-files (5) seconds. Every file's history entry goes on the wire once per
# repeat; the default schedule repeats each one 5 times (1 min to 24 h), so the runs use 5
# repeats a second apart (1s,2s,3s,4s,5s) and wait for the last: what an entry costs is the same,
# only sooner. Printed: history bytes on the wire / file bytes sent (targets: at most 3% for (a),
# 0.1% for (b)), and the sender's CPU-seconds per GiB of files, median of --runs (3). Nothing
# listens: the figures are the sender's.
#
#   bash scripts/bench.sh --history [--runs N] [--seconds N] [--big-files N] [--dir DIR]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
runs=3 seconds=10 big=5 dir=$repo/bench-work/history
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --big-files) big=$2; shift 2 ;;
    --dir) dir=$2; shift 2 ;;
    *) echo "bench_history.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
bin=${DDFT_BENCH_BIN:-$repo/build/bin}
[[ -n "${DDFT_BENCH_NO_BUILD:-}" ]] || bash "$repo/scripts/build.sh" > /dev/null
rm -rf "$dir"
mkdir -p "$dir"
python3 - "$bin/dd_file_send" "$dir" "$runs" "$seconds" "$big" <<'PY'
import os, re, resource, signal, socket, statistics, subprocess, sys, time

send, work, runs, seconds, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
DONE = re.compile(r"done: (\d+) file\(s\) sent, \d+ failed, ([\d,]+) bytes, \d+ datagrams"
                  r"(?: \(([\d,]+) bytes of them the history's repeats\))?")

def free_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port

def one(tag, run, files, per_second, size):
    base = os.path.join(work, f"{tag}{run}")
    watch, stage, state = (os.path.join(base, d) for d in ("watch", "stage", "state"))
    for d in (watch, stage, state):
        os.makedirs(d)
    log = os.path.join(base, "send.log")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, "w") as out:
        p = subprocess.Popen([send, "--dest", f"127.0.0.1:{free_port()}", "--watch", watch,
                              "--state-dir", state, "--history-repeat", "1s,2s,3s,4s,5s",
                              "--rate", "100", "--progress", "off"], stdout=out, stderr=out)
        blob = os.urandom(size)
        t0 = time.monotonic()
        for i in range(files):
            time.sleep(max(0.0, t0 + i / per_second - time.monotonic()))
            staged = os.path.join(stage, f"f{i:06d}.bin")
            with open(staged, "wb") as f:  # each file its own bytes, so its own digest
                f.write(i.to_bytes(16, "little"))
                f.write(memoryview(blob)[16:])
            os.rename(staged, os.path.join(watch, f"f{i:06d}.bin"))
        time.sleep(7)  # the last file's five repeats, a second apart, and a second to gather
        p.send_signal(signal.SIGTERM)
        if p.wait(60) != 0:
            sys.exit(f"bench_history: the sender failed; see {log}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    m = DONE.search(open(log).read())
    if not m or int(m[1]) != files:
        sys.exit(f"bench_history: not every file was sent; see {log}")
    data = int(m[2].replace(",", ""))
    hist = int((m[3] or "0").replace(",", ""))
    return hist / data, cpu / (data / 2**30)

for tag, files, rate, size, target in (("small", 100 * seconds, 100, 16 * 1024, 3.0),
                                       ("big", big, 1, 100 * 2**20, 0.1)):
    results = [one(tag, r, files, rate, size) for r in range(runs)]
    share = statistics.median(r[0] for r in results) * 100
    cpu = statistics.median(r[1] for r in results)
    print(f"history on the wire, {files} files of {size:,} bytes at {rate}/s, --rate 100: "
          f"{share:.4f}% of the file bytes (target <= {target}%), sender {cpu:.2f} CPU-s/GiB "
          f"(median of {runs})")
PY
