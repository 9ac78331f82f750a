#!/usr/bin/env python3
"""Turns scripts/bench.sh's raw results into the table and the JSON report.

Usage: bench_report.py RESULTS.tsv BYTES_PER_TRANSFER OUT.json
Each figure is given with its ratio to the ceiling it is bound by:
  mem-mem: UDP; disk-mem: min(disk read, UDP); mem-disk and disk-disk: min(disk write, UDP).
The durability section's figures (rows "durable") are each column's medians and the ratio of the
receiver's default write mode to --write-mode rw, both measured in the same sitting. The link
section's (rows "link") are medians per setting, memory to memory at --rate 0, with each side's
CPU-seconds per GiB: the figure that carries to other machines.
"""
import json
import statistics
import sys

results, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gib = size / 2**30
ceil, runs, small, durable, link, d2d = {}, {}, None, {}, {}, {}
for line in open(results):
    f = line.rstrip("\n").split("\t")
    if f[0] == "ceiling":
        ceil[f[1]] = float(f[2])
    elif f[0] == "run":
        runs.setdefault((f[1], f[2]), []).append(
            dict(rate=float(f[4]), tx_cpu=float(f[5]), rx_cpu=float(f[6]), tx_rss=int(f[7]),
                 rx_rss=int(f[8]), lost=int(f[9]), ok=int(f[10])))
    elif f[0] == "link":
        link.setdefault(f[1], []).append(
            dict(rate=float(f[3]), tx_cpu=float(f[4]), rx_cpu=float(f[5]), tx_rss=int(f[6]),
                 rx_rss=int(f[7]), lost=int(f[8]), ok=int(f[9]), rx_start=float(f[10])))
    elif f[0] in ("d2d", "d2d-tmpfs"):
        d2d.setdefault(f[0], []).append(
            dict(bytes=int(f[2]), fio=float(f[3]), wall=float(f[4]), tx_cpu=float(f[5]),
                 rx_cpu=float(f[6]), tx_rss=int(f[7]), rx_rss=int(f[8]), lost=int(f[9]),
                 ok=int(f[10])))
    elif f[0] == "small":
        small = dict(files=int(f[1]), seconds=float(f[2]), verified=int(f[3]), lost=int(f[4]))
    elif f[0] == "durable":
        durable.setdefault((f[1], f[2]), []).append(
            dict(mode=f[3], moved=int(f[5]), files=int(f[6]), wall=float(f[7]),
                 file_line_rate=float(f[8]), tx_cpu=float(f[9]), rx_cpu=float(f[10]),
                 tx_rss=int(f[11]), rx_rss=int(f[12]), lost=int(f[13]), passed=int(f[14]),
                 ok=int(f[15]) == 1 and int(f[14]) == int(f[6])))

def peak_rss(rs):
    """Each program's peak RSS over runs `rs`, in MiB (time's %M is KiB)."""
    return dict(tx_peak_rss_mib=round(max(r["tx_rss"] for r in rs) / 1024, 1),
                rx_peak_rss_mib=round(max(r["rx_rss"] for r in rs) / 1024, 1))

bound = {"mem-mem": min(ceil["udp"], 1e12), "disk-mem": min(ceil["read"], ceil["udp"]),
         "mem-disk": min(ceil["write"], ceil["udp"]), "disk-disk": min(ceil["write"], ceil["udp"])}
cells = []
for (pair, verify), all_runs in runs.items():
    # Figures are medians over the runs that delivered their file verified; a run that lost
    # packets and failed its file is counted in failed_runs, never averaged in as a rate.
    rs = [r for r in all_runs if r["ok"]] or all_runs
    med = lambda k: statistics.median(r[k] for r in rs)
    cells.append(dict(pair=pair, verify=verify, runs=len(all_runs),
                      failed_runs=sum(1 for r in all_runs if not r["ok"]),
                      mib_s=round(med("rate"), 1),
                      all_rates=[r["rate"] for r in all_runs],
                      ratio_to_ceiling=round(med("rate") / bound[pair], 3),
                      ceiling=bound[pair],
                      tx_cpu_s_per_gib=round(med("tx_cpu") / gib, 2),
                      rx_cpu_s_per_gib=round(med("rx_cpu") / gib, 2),
                      **peak_rss(rs),
                      packets_lost=sum(max(r["lost"], 0) for r in all_runs),
                      all_verified=all(r["ok"] for r in all_runs)))

def cell(pair, verify):
    return next((c for c in cells if c["pair"] == pair and c["verify"] == verify), None)

def verified(c):
    return c is not None and c["failed_runs"] < c["runs"]

targets = []
def target(name, value, limit, ok):
    targets.append(dict(target=name, value=value, limit=limit, met=bool(ok)))

dd = cell("disk-disk", "b2b")
if dd:
    target("disk->disk b2b >= 0.85 x min(disk write, UDP), zero loss", dd["ratio_to_ceiling"],
           0.85, verified(dd) and dd["ratio_to_ceiling"] >= 0.85 and dd["packets_lost"] == 0)
for pair in ("mem-mem", "disk-disk"):
    n = cell(pair, "none")
    for verify, limit in (("b2b", 0.05), ("sha256", 0.25)):
        c = cell(pair, verify)
        name = f"{pair}: {verify} costs <= {limit:.0%} against none"
        if verified(n) and verified(c):
            cost = round(1 - c["mib_s"] / n["mib_s"], 3)
            target(name, cost, limit, cost <= limit)
        elif n and c:
            target(name + " (no verified run to compare)", None, limit, False)
mm = cell("mem-mem", "none")
if mm and not verified(mm):
    target("memory->memory >= 0.9 x UDP ceiling (no verified run)", 0.0, 0.9, False)
elif mm:
    target("memory->memory >= 0.9 x UDP ceiling", mm["ratio_to_ceiling"], 0.9,
           mm["ratio_to_ceiling"] >= 0.9)
# Link settings: medians per setting over all runs (a run that lost packets counts with its rate:
# here losing is what is measured), CPU per GiB moved on each side and together.
lcells = []
for setting, rs in link.items():
    med = lambda k: statistics.median(r[k] for r in rs)
    tx, rx = med("tx_cpu") / gib, med("rx_cpu") / gib
    rx_run = statistics.median(r["rx_cpu"] - r["rx_start"] for r in rs) / gib
    lcells.append(dict(setting=setting, runs=len(rs), mib_s=round(med("rate"), 1),
                       all_rates=[r["rate"] for r in rs], tx_cpu_s_per_gib=round(tx, 2),
                       rx_cpu_s_per_gib=round(rx, 2), pair_cpu_s_per_gib=round(tx + rx, 2),
                       rx_start_cpu_s=round(med("rx_start"), 2),
                       rx_run_cpu_s_per_gib=round(rx_run, 2),
                       pair_run_cpu_s_per_gib=round(tx + rx_run, 2),
                       **peak_rss(rs),
                       packets_lost=sum(max(r["lost"], 0) for r in rs),
                       failed_runs=sum(1 for r in rs if not r["ok"])))
lorder = ["b2b", "none", "sha256", "aes", "fec", "gro-off", "gso-off"]
lcells.sort(key=lambda c: lorder.index(c["setting"]) if c["setting"] in lorder else 99)
lc = {c["setting"]: c for c in lcells}
if "b2b" in lc:
    b = lc["b2b"]
    gb_s = round(b["mib_s"] * 2**20 / 1e9, 2)
    target("link b2b >= 2.5 GB/s memory to memory, nothing lost", gb_s, 2.5,
           gb_s >= 2.5 and b["packets_lost"] == 0 and b["failed_runs"] == 0)
    target("link b2b: CPU-s/GiB of both programs together <= 0.8", b["pair_cpu_s_per_gib"], 0.8,
           b["pair_cpu_s_per_gib"] <= 0.8)
    for setting in ("sha256", "aes", "fec"):
        if setting in lc:
            c = lc[setting]
            ratio = round(c["mib_s"] / b["mib_s"], 3) if b["mib_s"] else 0.0
            target(f"link {setting} >= 0.8 x b2b, nothing lost", ratio, 0.8,
                   ratio >= 0.8 and c["packets_lost"] == 0 and c["failed_runs"] == 0)
if "gro-off" in lc:
    g = lc["gro-off"]
    target("link b2b with --gro off: CPU-s/GiB together <= 1.2", g["pair_cpu_s_per_gib"], 1.2,
           g["pair_cpu_s_per_gib"] <= 1.2)
# Disk to disk at --rate 0 against fio, each transfer with the fio run just before it: the
# median of the per-run ratios (a run that lost packets or failed its file counts as 0).
d2d_cells = []
for setting, rs in sorted(d2d.items()):
    med = lambda k: statistics.median(r[k] for r in rs)
    d2d_gib = rs[0]["bytes"] / 2**30
    for r in rs:
        r["mib_s"] = round(r["bytes"] / 2**20 / r["wall"], 1) if r["wall"] > 0 else 0.0
        r["ratio"] = round(r["mib_s"] / r["fio"], 3) if r["ok"] and r["fio"] > 0 else 0.0
    c = dict(setting=setting, bytes=rs[0]["bytes"], runs=len(rs), fio_mib_s=round(med("fio"), 1),
             mib_s=round(med("mib_s"), 1), ratio=round(med("ratio"), 3),
             all=[(r["fio"], r["mib_s"]) for r in rs],
             tx_cpu_s_per_gib=round(med("tx_cpu") / d2d_gib, 2),
             rx_cpu_s_per_gib=round(med("rx_cpu") / d2d_gib, 2),
             **peak_rss(rs),
             packets_lost=sum(max(r["lost"], 0) for r in rs),
             failed_runs=sum(1 for r in rs if not r["ok"]))
    d2d_cells.append(c)
    where = "source on the same disk" if setting == "d2d" else "source in tmpfs"
    target(f"link {setting}: one {d2d_gib:g} GiB file disk to disk ({where}), durable, --rate 0 "
           ">= 0.85 x fio direct write, nothing lost", c["ratio"], 0.85,
           c["ratio"] >= 0.85 and c["failed_runs"] == 0)

if not cells and not durable and not lcells and not d2d_cells:
    sys.exit("bench_report: no transfer results")
if cells:
    rx_rss = max(c["rx_peak_rss_mib"] for c in cells)
    tx_rss = max(c["tx_peak_rss_mib"] for c in cells)
    target("receiver peak RSS <= --buffer-mb (1024) + 64 MiB", rx_rss, 1088, rx_rss <= 1088)
    target("sender peak RSS <= 128 MiB", tx_rss, 128, tx_rss <= 128)
if small:
    target(f"{small['files']} files of 16 KB in < 10 s, all verified", small["seconds"], 10,
           small["seconds"] < 10 and small["verified"] == small["files"])

# Durability: each column's medians over its verified runs (a run is verified when the receiver
# and sender exited cleanly and every file Passed), and the ratio default/rw per workload.
unknown = [k for k, rs in durable.items() if any(r["mode"] == "unknown" for r in rs)]
if unknown:
    sys.exit(f"bench_report: the receive log of {unknown[0][0]}/{unknown[0][1]} names no write mode "
             "(no 'receiving on ... mode NAME' line)")
dcells = []
for (work, column), all_runs in durable.items():
    rs = [r for r in all_runs if r["ok"]] or all_runs
    med = lambda k: statistics.median(r[k] for r in rs)
    moved, files = all_runs[0]["moved"], all_runs[0]["files"]
    wall = med("wall")
    gib_moved = moved / 2**30
    label = (f"{moved / 2**30:g} GiB file" if moved >= 2**30 else f"{moved / 2**20:g} MiB file") \
        if work == "large" else f"{files} x 16 KB files"
    dcells.append(dict(workload=work, label=label, column=column,
                       mode="/".join(sorted({r["mode"] for r in all_runs})),
                       runs=len(all_runs), failed_runs=sum(1 for r in all_runs if not r["ok"]),
                       bytes=moved, files=files, wall_s=round(wall, 3),
                       all_walls=[r["wall"] for r in all_runs],
                       mib_s=round(moved / 2**20 / wall, 1) if wall > 0 else 0.0,
                       files_s=round(files / wall, 1) if wall > 0 else 0.0,
                       file_line_mib_s=round(med("file_line_rate"), 1) if work == "large" else None,
                       passed=min(r["passed"] for r in all_runs),
                       all_passed=[r["passed"] for r in all_runs],
                       tx_cpu_s_per_gib=round(med("tx_cpu") / gib_moved, 2),
                       rx_cpu_s_per_gib=round(med("rx_cpu") / gib_moved, 2),
                       **peak_rss(rs),
                       packets_lost=sum(max(r["lost"], 0) for r in all_runs)))
dcells.sort(key=lambda c: (c["workload"] != "large", c["column"] != "default"))
dratios = []
for work, figure, limit in (("large", "mib_s", 0.90), ("small", "files_s", 0.50)):
    d = next((c for c in dcells if c["workload"] == work and c["column"] == "default"), None)
    w = next((c for c in dcells if c["workload"] == work and c["column"] == "rw"), None)
    if not d or not w:
        continue
    ratio = round(d[figure] / w[figure], 3) if w[figure] > 0 else 0.0
    unit = "MiB/s" if figure == "mib_s" else "files/s"
    name = f"durability, {d['label']}: default ({d['mode']}) {unit} >= {limit:.2f} x rw, all verified"
    if d["mode"] == "rw":
        name += " (the default is rw: both columns measure rw)"
    ok = d["failed_runs"] == 0 and w["failed_runs"] == 0 and ratio >= limit
    d["ratio_to_rw"] = ratio
    dratios.append(dict(workload=work, figure=unit, default_mode=d["mode"], default=d[figure],
                        rw=w[figure], ratio=ratio, limit=limit, met=ok))
    target(name, ratio, limit, ok)

print(f"\nCeilings (MiB/s): disk write {ceil['write']}, disk read {ceil['read']}, "
      f"loopback UDP {ceil['udp']}" + (f"   ({size:,} bytes per transfer)\n" if cells else ""))
if cells:
    print(f"{'pair':<10} {'verify':<7} {'MiB/s':>8} {'ratio':>6} {'tx s/GiB':>9} {'rx s/GiB':>9} "
          f"{'tx RSS':>7} {'rx RSS':>7} {'lost':>6} failed")
    order = {p: i for i, p in enumerate(["mem-mem", "disk-mem", "mem-disk", "disk-disk"])}
    vorder = {"none": 0, "b2b": 1, "sha256": 2}
    for c in sorted(cells, key=lambda c: (order[c["pair"]], vorder[c["verify"]])):
        print(f"{c['pair']:<10} {c['verify']:<7} {c['mib_s']:>8.1f} {c['ratio_to_ceiling']:>6.2f} "
              f"{c['tx_cpu_s_per_gib']:>9.2f} {c['rx_cpu_s_per_gib']:>9.2f} "
              f"{c['tx_peak_rss_mib']:>7.1f} {c['rx_peak_rss_mib']:>7.1f} {c['packets_lost']:>6} "
              f"{c['failed_runs']}/{c['runs']}")
    print("\nMiB/s: median of the runs that delivered their file verified; failed: runs that lost "
          "packets\n(and so failed their file cleanly) out of all runs; CPU in s per GiB; RSS in MiB.")
if small:
    print(f"\n{small['files']} files of 16 KB: {small['seconds']} s, {small['verified']} verified")
if dcells:
    print("\nDurability: the receiver's default write mode (no --write-mode) against --write-mode rw, "
          "runs interleaved")
    print(f"{'cell':<20} {'column':<15} {'wall s':>7} {'MiB/s':>8} {'files/s':>8} {'File: MiB/s':>12} "
          f"{'tx s/GiB':>9} {'rx s/GiB':>9} {'passed':>11} {'lost':>5} {'failed':>6} {'ratio':>6}")
    for c in dcells:
        column = f"default ({c['mode']})" if c["column"] == "default" else "rw"
        line_rate = f"{c['file_line_mib_s']:.1f}" if c["file_line_mib_s"] is not None else "-"
        ratio = f"{c['ratio_to_rw']:.3f}" if "ratio_to_rw" in c else ""
        print(f"{c['label']:<20} {column:<15} {c['wall_s']:>7.2f} {c['mib_s']:>8.1f} "
              f"{c['files_s']:>8.1f} {line_rate:>12} {c['tx_cpu_s_per_gib']:>9.2f} "
              f"{c['rx_cpu_s_per_gib']:>9.2f} {str(c['passed']) + '/' + str(c['files']):>11} "
              f"{c['packets_lost']:>5} {str(c['failed_runs']) + '/' + str(c['runs']):>6} {ratio:>6}")
    print("\nMedians of the verified runs (every file Passed, both programs exited 0). wall: from the "
          "sender's start\nto the receiver's exit (--once), so it holds every sync, rename and folder "
          "sync; MiB/s and files/s\nfrom it; File: MiB/s the receive log's own rate for the file; "
          "CPU in s per GiB moved (user + system);\npassed: the fewest files Passed in a run, of "
          "those sent; ratio: default/rw of MiB/s (large file) and\nfiles/s (small files).")
if lcells:
    print("\nLink settings: memory to memory, --rate 0, synthetic source, --sink null")
    print(f"{'setting':<9} {'MiB/s':>8} {'tx s/GiB':>9} {'rx s/GiB':>9} {'both':>6} "
          f"{'rx start':>8} {'rx run':>7} {'both run':>8} {'tx RSS':>7} {'rx RSS':>7} {'lost':>7} "
          f"failed  runs (MiB/s)")
    for c in lcells:
        print(f"{c['setting']:<9} {c['mib_s']:>8.1f} {c['tx_cpu_s_per_gib']:>9.2f} "
              f"{c['rx_cpu_s_per_gib']:>9.2f} {c['pair_cpu_s_per_gib']:>6.2f} "
              f"{c['rx_start_cpu_s']:>8.2f} {c['rx_run_cpu_s_per_gib']:>7.2f} "
              f"{c['pair_run_cpu_s_per_gib']:>8.2f} "
              f"{c['tx_peak_rss_mib']:>7.1f} {c['rx_peak_rss_mib']:>7.1f} {c['packets_lost']:>7} "
              f"{c['failed_runs']}/{c['runs']}     {' '.join(f'{r:g}' for r in c['all_rates'])}")
    print("\nMedians of all runs; CPU: user + system seconds per GiB moved, of the whole process "
          "(as /usr/bin/time\nsees it); rx start: the receiver's CPU s before it was ready (its "
          "ring faulted in, paid once\nper start); rx run and both run: per GiB without it; RSS "
          "in MiB; lost: packets over all runs.")
if d2d_cells:
    print(f"\nDisk to disk, --rate 0, one {d2d_cells[0]['bytes'] / 2**30:g} GiB file, durable (rwd), "
          "ring sized to hold it; fio's\ndirect write of the same file just before each run")
    print(f"{'setting':<10} {'fio MiB/s':>9} {'MiB/s':>8} {'ratio':>6} {'tx s/GiB':>9} "
          f"{'rx s/GiB':>9} {'tx RSS':>7} {'rx RSS':>7} {'lost':>6} failed  runs (fio, transfer MiB/s)")
    for c in d2d_cells:
        print(f"{c['setting']:<10} {c['fio_mib_s']:>9.1f} {c['mib_s']:>8.1f} {c['ratio']:>6.3f} "
              f"{c['tx_cpu_s_per_gib']:>9.2f} {c['rx_cpu_s_per_gib']:>9.2f} "
              f"{c['tx_peak_rss_mib']:>7.1f} {c['rx_peak_rss_mib']:>7.1f} {c['packets_lost']:>6} "
              f"{c['failed_runs']}/{c['runs']}     "
              + " ".join(f"({f:g}, {m:g})" for f, m in c["all"]))
    print("\nMedians; ratio: the median of each run's transfer MiB/s (wall time, sender's start to "
          "the receiver's\nexit) over the fio run just before it; d2d-tmpfs: the sent file in "
          "/dev/shm, so the disk only\nwrites, as fio's does.")
print("\nTargets:")
for t in targets:
    print(f"  {'met ' if t['met'] else 'MISS'} {t['target']}: {t['value']} (limit {t['limit']})")
durability = None
if dcells:
    durability = dict(figure="wall time from the sender's start to the receiver's exit (--once)",
                      cells=dcells, ratios=dratios)
json.dump(dict(bytes_per_transfer=size, ceilings_mib_s=ceil, cells=cells, small_files=small,
               durability=durability, link=lcells, disk_to_disk=d2d_cells, targets=targets),
          open(out, "w"), indent=2)
print(f"\nJSON: {out}")
