#!/usr/bin/env python3
"""Writes a text corpus like the files diode links carry most: application logs, historian CSV
exports and XML, from a fixed seed, so that every run of the compression benchmark and tests sends
the same bytes.

    make_text_corpus.py OUT_DIR TOTAL_MIB [--files N] [--seed S]

OUT_DIR gets N files (default 8) of TOTAL_MIB / N MiB each, in turn a log, a CSV and an XML
file. Every line is made from the seeded generator: no block repeats another, so a compressor
sees what it would in real exports (repeated field names and formats, varying values).
"""
import argparse
import os
import random
import sys

HOSTS = [f"rtu-{i:03d}.substation{i % 17}.grid.local" for i in range(64)]
UNITS = ["kV", "A", "MW", "MVAr", "Hz", "degC", "bar", "%"]
LEVELS = ["INFO"] * 12 + ["DEBUG"] * 6 + ["WARN"] * 2 + ["ERROR"]
EVENTS = [
    "breaker {b} state change {s0} -> {s1} (operator {op})",
    "polled {n} points from {h} in {ms} ms",
    "IEC 60870-5-104 link to {h}: {n} ASDUs, seq {seq}",
    "historian batch {seq} committed: {n} rows, {ms} ms",
    "tap changer {b} position {n} (target {t})",
    "alarm {seq} acknowledged by {op}: {tag} {v:.3f} {u}",
    "measurement {tag} out of band: {v:.4f} {u} (limit {t})",
    "session {seq:08x} from {h} authenticated ({op})",
]
OPERATORS = ["jdoe", "asmith", "mkhan", "lchen", "pnovak", "system"]


def tag(rng):
    return f"{rng.choice('ABCDEFGH')}{rng.randrange(1, 40):02d}.{rng.choice(UNITS)}.{rng.randrange(1000):03d}"


def log_lines(rng, t):
    while True:
        t += rng.randrange(1, 250_000)
        sec, us = divmod(t, 1_000_000)
        h, rem = divmod(sec % 86400, 3600)
        m, s = divmod(rem, 60)
        ev = rng.choice(EVENTS).format(
            b=rng.randrange(1, 300), s0=rng.choice(["OPEN", "CLOSED"]), s1=rng.choice(["OPEN", "CLOSED"]),
            op=rng.choice(OPERATORS), n=rng.randrange(1, 5000), h=rng.choice(HOSTS),
            ms=rng.randrange(1, 900), seq=rng.randrange(1 << 32), t=rng.randrange(1, 33),
            tag=tag(rng), v=rng.uniform(-500, 500), u=rng.choice(UNITS))
        yield (f"2026-11-{1 + sec // 86400 % 28:02d}T{h:02d}:{m:02d}:{s:02d}.{us:06d}Z "
               f"{rng.choice(LEVELS):5s} [{rng.choice(HOSTS)}] scada.{rng.choice(['poll', 'hist', 'alarm', 'link'])}: {ev}\n")


def csv_lines(rng, t):
    yield "timestamp,tag,value,unit,quality,source\n"
    tags = [tag(rng) for _ in range(400)]
    values = {k: rng.uniform(0, 400) for k in tags}
    while True:
        t += rng.randrange(1, 20_000)
        k = rng.choice(tags)
        values[k] += rng.gauss(0, 0.8)
        yield f"{t / 1e6:.6f},{k},{values[k]:.5f},{k.split('.')[1]},{rng.choice(['GOOD'] * 30 + ['UNCERTAIN', 'BAD'])},{rng.choice(HOSTS)}\n"


def xml_lines(rng, t):
    yield '<?xml version="1.0" encoding="UTF-8"?>\n<export system="historian" version="4.2">\n'
    while True:
        t += rng.randrange(1, 60_000)
        k = tag(rng)
        yield (f'  <sample time="{t / 1e6:.6f}" tag="{k}" unit="{k.split(".")[1]}">\n'
               f'    <value quality="{rng.choice(["good", "good", "good", "suspect"])}">{rng.uniform(-1e4, 1e4):.6f}</value>\n'
               f'    <source host="{rng.choice(HOSTS)}" channel="{rng.randrange(64)}"/>\n'
               f'  </sample>\n')


def write_file(path, size, gen):
    chunk, have = [], 0
    with open(path, "w", encoding="ascii") as f:
        for line in gen:
            if have + len(line) >= size:
                chunk.append(line[: size - have])
                break
            chunk.append(line)
            have += len(line)
            if len(chunk) >= 4096:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir")
    ap.add_argument("total_mib", type=float)
    ap.add_argument("--files", type=int, default=8)
    ap.add_argument("--seed", type=int, default=20261126)
    a = ap.parse_args()
    if a.files < 1 or a.total_mib <= 0:
        sys.exit("make_text_corpus.py: --files must be at least 1 and TOTAL_MIB above 0")
    os.makedirs(a.out_dir, exist_ok=True)
    size = int(a.total_mib * 1024 * 1024) // a.files
    kinds = [("log", log_lines), ("csv", csv_lines), ("xml", xml_lines)]
    for i in range(a.files):
        ext, gen = kinds[i % 3]
        rng = random.Random(a.seed * 1000 + i)
        write_file(os.path.join(a.out_dir, f"export-{i:03d}.{ext}"), size, gen(rng, 1_790_000_000_000_000 + i))


if __name__ == "__main__":
    main()
