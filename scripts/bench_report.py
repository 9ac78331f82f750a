#!/usr/bin/env python3
"""Turns scripts/bench.sh's raw results into the table and the JSON report.

Usage: bench_report.py RESULTS.tsv BYTES_PER_TRANSFER OUT.json
Each figure is given with its ratio to the ceiling it is bound by:
  mem-mem: UDP; disk-mem: min(disk read, UDP); mem-disk and disk-disk: min(disk write, UDP).
"""
import json
import statistics
import sys

results, size, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
gib = size / 2**30
ceil, runs, small = {}, {}, None
for line in open(results):
    f = line.rstrip("\n").split("\t")
    if f[0] == "ceiling":
        ceil[f[1]] = float(f[2])
    elif f[0] == "run":
        runs.setdefault((f[1], f[2]), []).append(
            dict(rate=float(f[4]), tx_cpu=float(f[5]), rx_cpu=float(f[6]), tx_rss=int(f[7]),
                 rx_rss=int(f[8]), lost=int(f[9]), ok=int(f[10])))
    elif f[0] == "small":
        small = dict(files=int(f[1]), seconds=float(f[2]), verified=int(f[3]), lost=int(f[4]))

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
                      tx_peak_rss_mib=round(max(r["tx_rss"] for r in rs) / 1024, 1),
                      rx_peak_rss_mib=round(max(r["rx_rss"] for r in rs) / 1024, 1),
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
if not cells:
    sys.exit("bench_report: no transfer results")
rx_rss = max(c["rx_peak_rss_mib"] for c in cells)
tx_rss = max(c["tx_peak_rss_mib"] for c in cells)
target("receiver peak RSS <= --buffer-mb (1024) + 64 MiB", rx_rss, 1088, rx_rss <= 1088)
target("sender peak RSS <= 128 MiB", tx_rss, 128, tx_rss <= 128)
if small:
    target(f"{small['files']} files of 16 KB in < 10 s, all verified", small["seconds"], 10,
           small["seconds"] < 10 and small["verified"] == small["files"])

print(f"\nCeilings (MiB/s): disk write {ceil['write']}, disk read {ceil['read']}, "
      f"loopback UDP {ceil['udp']}   ({size:,} bytes per transfer)\n")
print(f"{'pair':<10} {'verify':<7} {'MiB/s':>8} {'ratio':>6} {'tx s/GiB':>9} {'rx s/GiB':>9} "
      f"{'tx RSS':>7} {'rx RSS':>7} {'lost':>6} failed")
order = {p: i for i, p in enumerate(["mem-mem", "disk-mem", "mem-disk", "disk-disk"])}
vorder = {"none": 0, "b2b": 1, "sha256": 2}
for c in sorted(cells, key=lambda c: (order[c["pair"]], vorder[c["verify"]])):
    print(f"{c['pair']:<10} {c['verify']:<7} {c['mib_s']:>8.1f} {c['ratio_to_ceiling']:>6.2f} "
          f"{c['tx_cpu_s_per_gib']:>9.2f} {c['rx_cpu_s_per_gib']:>9.2f} "
          f"{c['tx_peak_rss_mib']:>7.1f} {c['rx_peak_rss_mib']:>7.1f} {c['packets_lost']:>6} "
          f"{c['failed_runs']}/{c['runs']}")
if small:
    print(f"\n{small['files']} files of 16 KB: {small['seconds']} s, {small['verified']} verified")
print("\nMiB/s: median of the runs that delivered their file verified; failed: runs that lost "
      "packets\n(and so failed their file cleanly) out of all runs; CPU in s per GiB; RSS in MiB.")
print("\nTargets:")
for t in targets:
    print(f"  {'met ' if t['met'] else 'MISS'} {t['target']}: {t['value']} (limit {t['limit']})")
json.dump(dict(bytes_per_transfer=size, ceilings_mib_s=ceil, cells=cells, small_files=small,
               targets=targets), open(out, "w"), indent=2)
print(f"\nJSON: {out}")
