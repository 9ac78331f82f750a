#!/usr/bin/env python3
"""Channels benchmark: how soon an urgent file crosses while a bulk file fills the link.

    bash scripts/bench.sh --channels [--size 4G] [--rate 100] [--files 50] [--runs 3]
                                     [--dir DIR] [--smoke]

Two hot-folder channels into one dd_file_receive on loopback, dd_file_send at --rate R (MB/s):
"bulk" (class 1) holds one file of SIZE, "urgent" (class 0) gets FILES files of 100 KB, each
dropped (renamed in, --settle 0: ready at once) at a random time while the bulk file is on the
wire. Each run is two transfers, interleaved: the bulk file alone, then with the trickle. Reports
the urgent files' latency from ready to delivered (in place under OUTPUT/urgent/, polled every
2 ms), p50 and p99 over every run; the bulk file's rate (its File: line) with the trickle against
alone; and each program's CPU-seconds per GiB moved. Medians of the runs.
Targets: p99 at most 1 s; bulk with the trickle at least 0.98 x alone. Exits 1 when a target is
missed or a transfer failed (a program's status, a file not logged Passed, a copy that differs);
--smoke (256M, 10 files, 1 run) asserts no target. Needs build/bin (DDFT_BIN for another).
"""
import argparse
import filecmp
import os
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.environ.get("DDFT_BIN", os.path.join(REPO, "build", "bin"))
URGENT_SIZE = 100_000


def size_bytes(text):
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(proc):
    """Waits for `proc`; its exit status and user+system CPU seconds."""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime


class Arrivals(threading.Thread):
    """Polls a folder every 2 ms; the time each file first appeared (not a .ddft- temporary, nor
    the receiver's state folder .ddft)."""

    def __init__(self, folder):
        super().__init__(daemon=True)
        self.folder, self.seen, self.stop = folder, {}, False

    def run(self):
        while not self.stop:
            if os.path.isdir(self.folder):
                now = time.monotonic()
                for name in os.listdir(self.folder):
                    if not name.startswith(".ddft") and name not in self.seen:
                        self.seen[name] = now
            time.sleep(0.002)


def drop_urgent(args, stage, urgent_in):
    """Drops the urgent files at random over the middle 80% of the bulk file's time on the wire
    (from now); the time each was ready."""
    bulk_secs = args.size / (args.rate * (1 << 20))
    start = time.monotonic()
    rng = random.Random(args.seed)
    ready = {}
    for i, at in enumerate(sorted(rng.uniform(0.1, 0.9) * bulk_secs for _ in range(args.files))):
        time.sleep(max(0.0, start + at - time.monotonic()))
        name = f"alarm{i:03d}.bin"
        with open(os.path.join(stage, name), "wb") as f:
            f.write(os.urandom(URGENT_SIZE))
        ready[name] = time.monotonic()
        os.rename(os.path.join(stage, name), os.path.join(urgent_in, name))
    return ready


def check_and_restore(work, urgent, what, failures):
    """What was sent is in --sent-dir: each copy delivered must be the same. Then the bulk file
    goes back for the next run and the urgent files sent are removed."""
    out, sent = os.path.join(work, "out"), os.path.join(work, "sent")
    for channel, name in [("bulk", "big.bin")] + [("urgent", n) for n in urgent]:
        if not filecmp.cmp(os.path.join(sent, channel, name), os.path.join(out, channel, name),
                           shallow=False):
            failures.append(f"{what}: {channel}/{name} differs from what was sent")
    os.replace(os.path.join(sent, "bulk", "big.bin"), os.path.join(work, "bulk", "big.bin"))
    if os.path.isdir(os.path.join(sent, "urgent")):
        for name in os.listdir(os.path.join(sent, "urgent")):
            os.remove(os.path.join(sent, "urgent", name))


def transfer(args, work, trickle, failures):
    """One transfer of the bulk file, with the urgent trickle or without. Returns its figures."""
    bulk_in, urgent_in, stage = (os.path.join(work, d) for d in ("bulk", "urgent", "stage"))
    out, sent = os.path.join(work, "out"), os.path.join(work, "sent")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    port = free_port()
    rx_log = os.path.join(work, "receive.log")
    tx_log = os.path.join(work, "send.log")
    with open(rx_log, "w") as rl:
        rx = subprocess.Popen([os.path.join(BIN, "dd_file_receive"), "--listen",
                               f"127.0.0.1:{port}", "--output", out, "--once"],
                              stdout=rl, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while "receiving on" not in open(rx_log).read():
        if time.monotonic() > deadline:
            sys.exit("bench_channels: the receiver did not start:\n" + open(rx_log).read())
        time.sleep(0.05)
    poll = Arrivals(os.path.join(out, "urgent"))
    poll.start()
    with open(tx_log, "w") as tl:
        tx = subprocess.Popen([os.path.join(BIN, "dd_file_send"), "--dest", f"127.0.0.1:{port}",
                               "--rate", str(args.rate), "--settle", "0", "--sent-dir", sent,
                               "--channel", f"bulk:watch={bulk_in},class=1",
                               "--channel", f"urgent:watch={urgent_in},class=0"],
                              stdout=tl, stderr=subprocess.STDOUT)
    ready = {}
    bulk_out = os.path.join(out, "bulk", "big.bin")

    def alive():
        if tx.poll() is not None or rx.poll() is not None:
            rx.kill()
            sys.exit("bench_channels: a program stopped:\n" + open(tx_log).read()
                     + open(rx_log).read())
    if trickle:
        while "bulk/big.bin, Size:" not in open(rx_log).read():
            alive()
            time.sleep(0.01)
        ready = drop_urgent(args, stage, urgent_in)
    while not os.path.exists(bulk_out):
        alive()
        time.sleep(0.05)
    if trickle:
        end = time.monotonic() + 10
        while len(poll.seen) < args.files and time.monotonic() < end:
            time.sleep(0.05)
    tx.send_signal(signal.SIGTERM)
    tx_status, tx_cpu = cpu_seconds(tx)
    rx_status, rx_cpu = cpu_seconds(rx)
    poll.stop = True
    log = open(rx_log).read()
    m = re.search(r"File: bulk/big\.bin, Trans: .*Rate: ([0-9.]+) \(MB/s\).* Passed", log)
    what = "with the trickle" if trickle else "alone"
    if tx_status != 0 or rx_status != 0 or not m:
        failures.append(f"{what}: sender {tx_status}, receiver {rx_status}, bulk "
                        f"{'passed' if m else 'not logged Passed'}")
    if trickle and len(poll.seen) < args.files:
        failures.append(f"{what}: {args.files - len(poll.seen)} urgent file(s) not delivered")
    check_and_restore(work, poll.seen, what, failures)
    gib = (args.size + len(ready) * URGENT_SIZE) / (1 << 30)
    return {"bulk_mb_s": float(m.group(1)) if m else 0.0,
            "latency": [poll.seen[n] - ready[n] for n in ready if n in poll.seen],
            "tx_cpu_gib": tx_cpu / gib, "rx_cpu_gib": rx_cpu / gib}


def percentile(values, p):
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))] if v else float("nan")


def main():
    ap = argparse.ArgumentParser(description="Urgent-file latency under a saturating bulk file")
    ap.add_argument("--size", default="4G")
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--files", type=int, default=50)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--dir", default="/tmp/ddft-channels")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args()
    if args.smoke:
        args.size, args.files, args.runs = "256M", 10, 1
    args.size = size_bytes(args.size)
    for d in ("bulk", "urgent", "stage", "sent"):
        os.makedirs(os.path.join(args.dir, d), exist_ok=True)
    big = os.path.join(args.dir, "bulk", "big.bin")
    if not os.path.exists(big) or os.path.getsize(big) != args.size:
        with open(big, "wb") as f:
            for _ in range(args.size >> 20):
                f.write(os.urandom(1 << 20))
            f.write(os.urandom(args.size & ((1 << 20) - 1)))
    failures, alone, mixed, latency = [], [], [], []
    for r in range(args.runs):
        a = transfer(args, args.dir, False, failures)
        args.seed += 1
        t = transfer(args, args.dir, True, failures)
        alone.append(a)
        mixed.append(t)
        latency += t["latency"]
        print(f"run {r + 1}: bulk alone {a['bulk_mb_s']:.1f} MB/s, with the trickle "
              f"{t['bulk_mb_s']:.1f} MB/s; urgent p50 {percentile(t['latency'], 50) * 1000:.1f} "
              f"ms, p99 {percentile(t['latency'], 99) * 1000:.1f} ms; CPU-s/GiB sender "
              f"{t['tx_cpu_gib']:.2f}, receiver {t['rx_cpu_gib']:.2f}", flush=True)
    med = lambda runs, k: statistics.median(x[k] for x in runs)
    ratio = med(mixed, "bulk_mb_s") / med(alone, "bulk_mb_s") if med(alone, "bulk_mb_s") else 0
    p50, p99 = percentile(latency, 50), percentile(latency, 99)
    print(f"urgent latency over {len(latency)} files: p50 {p50 * 1000:.1f} ms, "
          f"p99 {p99 * 1000:.1f} ms (target: p99 at most 1000 ms)")
    print(f"bulk: alone {med(alone, 'bulk_mb_s'):.1f} MB/s, with the trickle "
          f"{med(mixed, 'bulk_mb_s'):.1f} MB/s: {ratio:.3f} x (target: at least 0.98)")
    print(f"CPU-s/GiB (medians): alone sender {med(alone, 'tx_cpu_gib'):.2f}, receiver "
          f"{med(alone, 'rx_cpu_gib'):.2f}; with the trickle sender {med(mixed, 'tx_cpu_gib'):.2f}, "
          f"receiver {med(mixed, 'rx_cpu_gib'):.2f}")
    for f in failures:
        print("FAILED: " + f)
    missed = not args.smoke and (p99 > 1.0 or ratio < 0.98)
    if missed:
        print("FAILED: a target was missed")
    return 1 if failures or missed else 0


if __name__ == "__main__":
    sys.exit(main())
