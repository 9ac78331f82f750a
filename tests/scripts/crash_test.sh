#!/usr/bin/env bash
# Crash points: the receiver killed with SIGKILL at 50 and more points of one multi-file transfer,
# and restarted at once on the same output folder and port while the sender goes on (a diode has
# no back channel: the sender never knows). After the transfer, every file of the send manifest
# must be either under its final name and byte-identical to its source, with no failure record,
# or not there with exactly one failure record naming it; no temporary file (.ddft-*.part,
# .ddft-*.meta) may remain anywhere; and dd_reconcile's report from the manifest and the receive
# log must say the same of each file.
#
# Usage: crash_test.sh DD_FILE_SEND DD_FILE_RECEIVE DD_RECONCILE
# DDFT_CRASH_SEED=N makes the same files and the same choices again (not the same timing).
#
# The transfer: one sender session at a paced 2.5 MB/s of about 190 MB: 416 small files (0 to
# 512 KiB, some empty) in nested folders, "report.txt" in 32 folders, 48 files of 1-3 MiB and
# 3 of 16-20 MiB, spread through the send order. Its files are named so that the sender's sorted
# order mixes the sizes. The receiver runs the default --write-mode (rwd: each file synced before
# its rename and its Passed line), a 64 MB buffer, and an --on-complete hook; each run picks
# --direct-io auto or off at random (off leaves a large file's data in the page cache for its
# sync, a longer window to kill in).
#
# Where the kills are aimed (the trigger), each from the receive log or the output folder as the
# test watches them (every 2 ms):
#   announce     the instant a file's "... receiving" line appears (its temporary file is made)
#   mid-data     a random instant while a file of 64 KiB or more arrives, or while no file is
#                announced for a second (a large file arriving)
#   end of file  a file of 64 KiB or more: a random instant up to its expected verify and sync
#                time after its temporary file reaches its full size (read-back verify, flush,
#                the journal's C line, rename, folder sync); two of them on a 16-20 MiB file
#   hook         while the --on-complete hook runs for a file (the armed hook tells the test)
#   start-up     a few ms after a restart, during the recovery of the run killed before
#   failure records  the instant a "FAILED: never announced" line appears: the sender's file
#                list named files no run saw, and their records are being written (a burst)
# and where each landed, from what the targeted file's state was at the kill (its temporary file
# and size, the journal's lines for it, its final name, its Passed line); the receive log's last
# line at each kill is listed too. Kills stop once 94% of the data was sent, so that the last run
# gets the sender's final file list and names whatever went while no receiver ran.
set -uo pipefail
send_bin=$(realpath "$1") recv_bin=$(realpath "$2") reconcile=$(realpath "$3")
work=$(mktemp -d)
cleanup() {
  # The driver's own children, by the ids it wrote (it kills them itself unless it was killed).
  local pid
  for pid in $(cat "$work"/pids 2>/dev/null); do kill -9 "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

python3 - "$send_bin" "$recv_bin" "$reconcile" "$work" <<'PY'
import glob
import json
import math
import os
import random
import re
import signal
import subprocess
import sys
import time

send_bin, recv_bin, reconcile, work = sys.argv[1:5]
seed = int(os.environ.get("DDFT_CRASH_SEED") or random.randrange(1 << 30))
rng = random.Random(seed)
print(f"crash_test: seed {seed} (DDFT_CRASH_SEED={seed} gives the same files and choices)",
      flush=True)

RATE_MB = 2.5                     # the sender's --rate, MiB/s
KILLS_WANTED = 75                 # spread over the transfer
SETTLE_S = 0.15                   # a new run receives this long before its next kill
KILLS_MIN = 50                    # fewer: the test fails
QUOTA = {"announce": 10, "mid-data": 12, "end of file": 16, "hook": 10, "start-up": 4,
         "failure records": 4}
BIG_END_KILLS = 2                 # "end of file" kills on the 16-20 MiB files (--direct-io off)
STOP_AT = 0.94                    # no kill once this share of the bytes was sent
src = os.path.join(work, "src")
out = os.path.join(work, "out")
rx_log = os.path.join(work, "rx.log")
manifest = os.path.join(work, "sent.jsonl")
pids_file = os.path.join(work, "pids")
failures = []


DEBUG = bool(os.environ.get("DDFT_CRASH_DEBUG"))


def debug(text):
    if DEBUG:
        print(f"  [{time.monotonic() - t_send:6.2f} s] {text}", flush=True)


def fail(text):
    failures.append(text)
    print(f"FAIL {text}", flush=True)


# --- The files to send.
def make_tree():
    syl = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze", "bo", "di"]
    word = lambda: rng.choice(syl) + rng.choice(syl)
    files = {}  # relative path -> size
    for g in range(16):
        top = f"g{g:02d}"
        a, b, c = word(), word(), word()
        folders = [top, f"{top}/{a}", f"{top}/{a}/{b}", f"{top}/{c}", f"{top}/{a}/{b}/{word()}"]
        for i in range(26):
            if rng.random() < 0.03:
                size = 0
            else:
                size = int(math.exp(rng.uniform(math.log(50), math.log(512 << 10))))
            files[f"{rng.choice(folders)}/{word()}{i:02d}.dat"] = size
        for folder in rng.sample(folders, 2):  # the same name in many folders
            files[f"{folder}/report.txt"] = rng.randint(100, 20000)
        for j in range(3):
            files[f"{rng.choice(folders)}/{word()}-m{j}.bin"] = rng.randint(1 << 20, 3 << 20)
        if g in (3, 8, 13):
            files[f"{top}/{word()}-big.bin"] = rng.randint(16 << 20, 20 << 20)
    for rel, size in files.items():
        path = os.path.join(src, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            left = size
            while left:
                n = min(left, 8 << 20)
                f.write(os.urandom(n))
                left -= n
    return files


files = make_tree()
total = sum(files.values())
expected_s = total / (RATE_MB * (1 << 20))
print(f"crash_test: {len(files)} files, {total:,} bytes: about {expected_s:.0f} s at "
      f"{RATE_MB} MB/s", flush=True)

hook = os.path.join(work, "hook.sh")
with open(hook, "w") as f:
    f.write("""#!/bin/sh
# The crash test's --on-complete hook: WORK FINAL_PATH. Once the test arms it (WORK/hook.arm),
# the first call to take the arm says which file it runs for, and keeps running while the test
# kills the receiver under it.
if mv "$1/hook.arm" "$1/hook.taken.$$" 2>/dev/null; then
  printf '%s\\n' "$DDFT_REL_PATH" > "$1/hook.fired.new" && mv "$1/hook.fired.new" "$1/hook.fired"
  sleep 2
fi
exit 0
""")

port = 20000 + rng.randrange(30000)
os.makedirs(out)
children = []


def remember(proc):
    children.append(proc)
    with open(pids_file, "a") as f:
        f.write(f"{proc.pid}\n")


# --- The receive log, read as it grows.
PREFIX = re.compile(r"\d\d/\d\d-\d\d:\d\d:\d\d ")
ANNOUNCE = re.compile(r"Info: (?P<path>.*), Size: (?P<size>[\d,]+) \(bytes\) \. \. \. receiving")
PASSED = re.compile(r"File: (?P<path>.*), Trans: .* Passed$")
FAILED = re.compile(r"Error: (?P<path>.*?) FAILED: ")
SESSION = re.compile(r"Info: sender session ([0-9a-f]{16}) started")


class Tail:
    def __init__(self, path):
        self.fd = os.open(path, os.O_RDONLY | os.O_CREAT, 0o644)
        self.pos = 0
        self.rest = b""

    def lines(self):
        data = os.pread(self.fd, 1 << 20, self.pos)
        self.pos += len(data)
        *done, self.rest = (self.rest + data).split(b"\n")
        msgs = []
        for raw in done:
            line = raw.decode("utf-8", "replace")
            m = PREFIX.match(line)
            msgs.append(line[m.end():] if m else line)
        return msgs


tail = Tail(rx_log)
passed = set()     # paths logged Passed, all runs
session = None


# --- Receiver runs.
class Run:
    def __init__(self, index):
        self.index = index
        self.direct_io = rng.choice(["auto", "off"])
        self.up = False
        self.in_flight = {}  # path -> size, announced by this run and not finished
        self.quiet_since = None  # its start line, then its last announce
        self.up_at = None  # its start line
        self.last = "(nothing logged yet)"
        self.spawned = time.monotonic()
        console = open(os.path.join(work, "rx-console.log"), "ab")
        self.proc = subprocess.Popen(
            [recv_bin, "--listen", f"127.0.0.1:{port}", "--output", out, "--log-file", rx_log,
             "-q", "--buffer-mb", "64", "--write-buffers", "16", "--direct-io", self.direct_io,
             "--on-complete", f"sh {hook} {work}"],
            stdin=subprocess.DEVNULL, stdout=console, stderr=console)
        console.close()
        remember(self.proc)


def journal():
    """(kind, session, id, path) of each line of the receiver's journal."""
    rows = []
    try:
        with open(os.path.join(out, ".ddft-outcomes"), encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 6)
                if len(parts) == 7:
                    try:
                        rows.append((parts[0], parts[1], int(parts[2]), json.loads(parts[6])))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    return rows


TEMPORARY = re.compile(r"\.ddft-[0-9a-f]{16}-\d+\.(part|meta)")
OWN_FILES = {".ddft-outcomes", ".ddft-lock", ".ddft-session-state", ".ddft-record-reserve"}


def temporaries():
    """The receiver's temporary files anywhere under the output folder (failed folder too), and
    the files it keeps in the output folder's top other than its own (a rewrite's .new, say)."""
    found = []
    for dirpath, _, filenames in os.walk(out):
        for name in filenames:
            if TEMPORARY.fullmatch(name) or (dirpath == out and name.startswith(".ddft-")
                                             and name not in OWN_FILES):
                found.append(os.path.join(dirpath, name))
    return found


def origin_path(part):
    """The path the origin of the temporary file PART names: its xattr, or where the file
    system has none, its sidecar (.meta)."""
    try:
        text = os.getxattr(part, "user.ddft.origin").decode("utf-8", "replace")
    except OSError:
        try:
            with open(part[:-len(".part")] + ".meta", encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError:
            return None
    m = re.search(r"^path=(.*)$", text, re.M)
    return m[1] if m else None


def find_part(rel):
    """The temporary file of REL (its origin names it), or None."""
    folder = os.path.join(out, os.path.dirname(rel))
    for part in glob.glob(os.path.join(glob.escape(folder), ".ddft-*.part")):
        if origin_path(part) == rel:
            return part
    return None


def landed(rel):
    """Where the file REL was at the kill (the receiver is dead: nothing moves any more)."""
    kinds = {k for k, _, _, p in journal() if p == rel}
    part = find_part(rel)
    size = files[rel]
    if "P" in kinds:
        return "done (journal P)"
    if rel in passed:
        return "logged Passed, before journal P"
    if os.path.exists(os.path.join(out, rel)):
        return "renamed, before Passed"
    if "C" in kinds:
        return "journal C, before rename"
    if "F" in kinds:
        return "failing (journal F)"
    if part is not None:
        have = os.stat(part).st_size
        return "data complete: verify/flush" if have == size else "mid-data"
    return "before its temporary file"


kills = []          # dicts
done_by_trigger = {k: 0 for k in QUOTA}
big_end = 0


def kill_now(run, trigger, target, detail=""):
    """SIGKILL, then what the receive log said last and where the target file was."""
    run.proc.send_signal(signal.SIGKILL)
    run.proc.wait()
    for msg in tail.lines():  # the last lines the killed run wrote
        note_line(run, msg, live=False)
    where = landed(target) if target else "-"
    k = {"n": len(kills) + 1, "t": time.monotonic() - t_send, "run": run.index,
         "direct_io": run.direct_io, "trigger": trigger, "target": target or "-",
         "landed": where, "last": run.last, "detail": detail}
    kills.append(k)
    done_by_trigger[trigger] = done_by_trigger.get(trigger, 0) + 1
    print(f"kill {k['n']:2d} at {k['t']:5.1f} s, run {run.index} (direct-io {run.direct_io}): "
          f"{trigger}{' ' + detail if detail else ''}; {k['target']}: {where}; "
          f"log last: {run.last[:110]}", flush=True)
    for name in glob.glob(os.path.join(work, "hook.*")):
        if not name.endswith(".sh"):
            os.unlink(name)


def note_line(run, msg, live):
    global session
    if not msg:
        return None
    run.last = msg
    m = SESSION.match(msg)
    if m:
        session = m[1]
    if msg.startswith("Info: receiving on "):
        run.up = True
        run.up_at = run.quiet_since = time.monotonic()
    m = PASSED.match(msg)
    if m:
        passed.add(m["path"])
        run.in_flight.pop(m["path"], None)
    m = FAILED.match(msg)
    if m:
        run.in_flight.pop(m["path"], None)
    m = ANNOUNCE.match(msg)
    if m:
        size = int(m["size"].replace(",", ""))
        run.in_flight[m["path"]] = size
        run.quiet_since = time.monotonic()
        if live:
            return (m["path"], size)
    return None


class Progress:
    """Bytes the sender has sent, from its manifest's lines as they are appended."""

    def __init__(self):
        self.tail = Tail(manifest)
        self.bytes = 0

    def sent(self):
        for line in self.tail.lines():
            try:
                self.bytes += json.loads(line).get("size") or 0
            except ValueError:
                pass
        return self.bytes


def choose(size, waited):
    """The trigger to aim at a file of SIZE just announced, WAITED s after the kill was due: the
    one furthest behind its quota; None to wait for a larger file while only the triggers that
    need one are behind (for 1.5 s at most)."""
    if size >= 16 << 20:
        return "mid-data"  # (its "end of file" kills are aimed apart)
    options = ["announce", "hook"]
    if size >= 64 << 10:
        options.append("mid-data")
        options.append("end of file")
    behind = {o: QUOTA[o] - done_by_trigger[o] for o in ("announce", "hook", "mid-data",
                                                          "end of file")}
    mine = [o for o in options if behind[o] > 0]
    if mine:
        most = max(behind[o] for o in mine)
        return rng.choice([o for o in mine if behind[o] == most])
    if any(v > 0 for v in behind.values()) and waited < 1.5:
        return None
    return rng.choice(options)


def wait_up(run, limit=10.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        for msg in tail.lines():
            note_line(run, msg, live=False)
        if run.up:
            return True
        if run.proc.poll() is not None:
            break
        time.sleep(0.005)
    return False


runs = [Run(1)]
if not wait_up(runs[0]):
    with open(os.path.join(work, "rx-console.log"), errors="replace") as f:
        print(f.read())
    sys.exit("crash_test: the receiver did not start")
t_send = time.monotonic()
with open(os.path.join(work, "tx.log"), "wb") as tx_out:
    sender = subprocess.Popen(
        [send_bin, src + "/", "--dest", f"127.0.0.1:{port}", "--rate", str(RATE_MB),
         "--manifest", manifest, "--heartbeat-ms", "100"],
        stdin=subprocess.DEVNULL, stdout=tx_out, stderr=subprocess.STDOUT)
remember(sender)

gap = STOP_AT * expected_s / KILLS_WANTED
progress = Progress()
target = None      # the kill being aimed: dict
stopped = False


def aim(trigger, path, size, now, joined):
    """Sets the target for TRIGGER at the file PATH of SIZE just announced; returns the kill to
    make at once (announce) or None."""
    global target, big_end
    if trigger == "end of file" and joined:
        trigger = "mid-data"  # it cannot be whole: no end to aim at
    debug(f"aim {trigger} at {path} ({size:,} bytes)")
    if trigger == "announce":
        return ("announce", path, "")
    if trigger == "mid-data":
        delay = rng.uniform(0.05, 0.9) * max(size, 1) / (RATE_MB * (1 << 20))
        target = {"trigger": trigger, "path": path, "at": now + delay,
                  "detail": f"{delay * 1000:.0f} ms into {size:,} bytes"}
    elif trigger == "end of file":
        if size >= 16 << 20:
            big_end += 1
        target = {"trigger": trigger, "path": path, "size": size, "at": None,
                  "give_up": now + 1.5 * size / (RATE_MB * (1 << 20)) + 3}
    else:
        open(os.path.join(work, "hook.arm"), "w").close()
        target = {"trigger": "hook", "path": None, "give_up": now + 10}
    return None


try:
    while sender.poll() is None:
        time.sleep(0.001 if target and target["trigger"] == "end of file" else 0.002)
        run = runs[-1]
        now = time.monotonic()
        if run.proc.poll() is not None:
            fail(f"receiver run {run.index} exited by itself (status {run.proc.returncode})")
            break
        if not stopped and (progress.sent() >= STOP_AT * total or
                            now - t_send > 1.5 * expected_s):
            stopped = True
            target = None
            for name in glob.glob(os.path.join(work, "hook.arm")):
                os.unlink(name)
            print(f"crash_test: kills stop at {now - t_send:.1f} s", flush=True)
        # The kills are spread over the transfer, and each run receives a while first (files
        # announced to it, not joined mid-file).
        due = max(t_send + len(kills) * gap, (run.up_at or now) + SETTLE_S)
        fire = None
        for msg in tail.lines():
            announced = note_line(run, msg, live=True)
            if stopped or fire or not run.up:
                continue
            if target is None and "FAILED: never announced" in msg and now >= due and \
                    done_by_trigger["failure records"] < QUOTA["failure records"]:
                m = FAILED.match(msg)
                fire = ("failure records", m[1] if m else None, "")
            elif target is None and announced:
                path, size = announced
                joined = "(joined mid-file" in msg
                if size >= 16 << 20 and not joined and big_end < BIG_END_KILLS and \
                        run.direct_io == "off" and \
                        now + size / (RATE_MB * (1 << 20)) < t_send + STOP_AT * expected_s:
                    fire = aim("end of file", path, size, now, joined)  # due or not
                elif now >= due:
                    trigger = choose(size, now - due)
                    if trigger is not None:
                        fire = aim(trigger, path, size, now, joined)
            elif target and target["trigger"] == "end of file" and target["at"] is None:
                m = PASSED.match(msg)
                if m and m["path"] == target["path"]:  # missed its sync: kill at once
                    target["at"] = now
                    target["detail"] = "(its Passed line came first)"
                m = FAILED.match(msg)
                if m and m["path"] == target["path"]:  # it will never be whole
                    debug(f"give up {target['path']}: {msg[:100]}")
                    target = None
        if stopped:
            continue
        path = next(reversed(run.in_flight), None) if run.in_flight else None
        if target is None and fire is None and run.up and now >= due and \
                now - run.quiet_since >= (1.0 if path else 2.5):
            # No announce for a while (a large file arriving, or one an earlier run knew, which
            # this one leaves alone): a kill at a random instant.
            delay = rng.uniform(0, 0.5)
            debug(f"aim mid-data at a random instant ({path})")
            target = {"trigger": "mid-data", "path": path, "at": now + delay,
                      "detail": "at a random instant" + ("" if path else ", no file in flight")}
        if fire:
            kill_now(run, *fire)
        elif target:
            t = target
            if t["trigger"] == "hook":
                fired = os.path.join(work, "hook.fired")
                if os.path.exists(fired):
                    with open(fired) as f:
                        path = f.read().strip()
                    target = None
                    kill_now(run, "hook", path, "(while its hook ran)")
                elif now > t["give_up"]:
                    debug("give up the hook")
                    target = None
            elif t["trigger"] == "end of file" and t["at"] is None:
                part = find_part(t["path"])
                if part is not None:
                    try:
                        have = os.stat(part).st_size
                    except OSError:
                        have = -1
                    if have == t["size"]:
                        # Up to the time a read-back and a sync of it may take (a large
                        # file's data is in the page cache with --direct-io off).
                        window = 0.001 + t["size"] / (150e6 if t["size"] >= 16 << 20 else 300e6)
                        delay = rng.uniform(0, window)
                        t["at"] = now + delay
                        t["detail"] = f"{delay * 1000:.1f} ms after its last byte was written"
                elif os.path.exists(os.path.join(out, t["path"])):
                    t["at"] = now
                    t["detail"] = "(renamed before the test saw it whole)"
                if t["at"] is None and now > t["give_up"]:
                    debug(f"give up {t['path']}")
                    target = None
            if target and target.get("at") is not None and now >= target["at"]:
                target = None
                kill_now(run, t["trigger"], t["path"], t.get("detail", ""))
        if runs[-1].proc.poll() is None:
            continue
        # Killed: restart at once; now and then kill the new run during its start-up.
        runs.append(Run(len(runs) + 1))
        if QUOTA["start-up"] > done_by_trigger["start-up"] and rng.random() < 0.15:
            time.sleep(rng.uniform(0.003, 0.06))
            kill_now(runs[-1], "start-up", None, "")
            runs.append(Run(len(runs) + 1))
        if not wait_up(runs[-1]):
            fail(f"receiver run {runs[-1].index} did not start")
            break
    rc = sender.wait()
    if rc != 0:
        fail(f"sender exit status {rc}")
    run = runs[-1]
    # The last run drains: the sender's final file list, the last files' syncs, the hooks; then
    # the log and the folder stay quiet (a file that lost its end would wait --file-timeout).
    end = time.monotonic() + 45
    quiet_since = time.monotonic()
    while run.proc.poll() is None:
        msgs = tail.lines()
        for msg in msgs:
            note_line(run, msg, live=False)
        if msgs or temporaries():
            quiet_since = time.monotonic()
        if time.monotonic() - quiet_since > 3:
            break
        if time.monotonic() > end:
            fail(f"the last receiver run still busy 45 s after the sender: {temporaries()}")
            break
        time.sleep(0.05)
    if run.proc.poll() is not None:
        fail(f"the last receiver run exited by itself (status {run.proc.returncode})")
    run.proc.send_signal(signal.SIGTERM)
    try:
        run.proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        fail("the last receiver run did not stop within 30 s of SIGTERM")
finally:
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait()
for msg in tail.lines():
    note_line(runs[-1], msg, live=False)
elapsed = time.monotonic() - t_send

# --- What became of every file.
sent = []
with open(manifest) as f:
    for line in f:
        if line.strip():
            sent.append(json.loads(line))
if len(sent) != len(files):
    fail(f"the manifest has {len(sent)} lines for {len(files)} files")
records = {}
failed_dir = os.path.join(out, ".failed")
data_files = set()
referenced = set()
for name in sorted(os.listdir(failed_dir)) if os.path.isdir(failed_dir) else []:
    full = os.path.join(failed_dir, name)
    if not name.endswith(".json"):
        data_files.add(name)
        continue
    try:
        with open(full) as f:
            rec = json.load(f)
    except (ValueError, OSError) as e:
        fail(f"failure record {name} is not valid JSON: {e}")
        continue
    # By the file it is for: a record of a temporary file whose origin could not be read names
    # that temporary file, whose name holds the session and the file id.
    records.setdefault((rec.get("session"), rec.get("file_id")), []).append((name, rec))
    if rec.get("data_file"):
        referenced.add(rec["data_file"])
for name in sorted(data_files - referenced):
    fail(f"{failed_dir}/{name}: a file in the failed folder no record names")

for p in temporaries():
    fail(f"temporary file left: {p}")

def same(a, b):
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            p, q = x.read(1 << 20), y.read(1 << 20)
            if p != q:
                return False
            if not p:
                return True

fs_outcome = {}   # path -> "delivered" | "failed"
lost = []
for e in sent:
    rel = e["path"]
    final = os.path.join(out, rel)
    recs = records.get((e["session"], e["file_id"]), [])
    for name, r in recs:
        if r.get("name") != rel:
            fail(f"{rel} (file {e['file_id']}): its record {name} names it {r.get('name')!r}")
    here = os.path.isfile(final)
    good = here and same(final, os.path.join(src, rel))
    if e["status"] != "sent":
        fail(f"{rel}: the sender could not send it: {e.get('reason')}")
    if here and not good:
        fail(f"{rel}: under its final name but not identical to its source")
    if good and not recs:
        fs_outcome[rel] = "delivered"
    elif not here and len(recs) == 1:
        fs_outcome[rel] = "failed"
    else:
        what = ("delivered and named failed" if good else
                "neither delivered nor named" if not recs else
                f"named by {len(recs)} failure records")
        lost.append(rel)
        fail(f"{rel} (file {e['file_id']}): {what}; records: {[r[0] for r in recs]}")
# Nothing under the output folder that was not sent (a second copy kept as name.1.ext, say).
names = {e["path"] for e in sent}
for dirpath, dirnames, filenames in os.walk(out):
    rel_dir = os.path.relpath(dirpath, out)
    if rel_dir == ".failed":
        dirnames[:] = []
        continue
    for name in filenames:
        rel = os.path.normpath(os.path.join(rel_dir, name))
        if rel in names or (rel_dir == "." and name.startswith(".ddft-")):
            continue
        if not TEMPORARY.fullmatch(name):  # (those failed above)
            fail(f"{rel}: in the output folder, sent by no one")
ids = {(e["session"], e["file_id"]) for e in sent}
for key, recs in records.items():
    if key not in ids:
        fail(f"failure record(s) {[r[0] for r in recs]} of a file that was not sent: {key}")

# --- dd_reconcile must say the same.
rec = subprocess.run([reconcile, "--json", manifest, rx_log], capture_output=True, text=True)
rows = [json.loads(l) for l in rec.stdout.splitlines() if l.strip()]
by_path = {r["path"]: r for r in rows if "outcome" in r and r["outcome"] != "not in manifest"}
extra = [r for r in rows if r.get("outcome") == "not in manifest"]
summary_row = next((r for r in rows if "summary" in r), None)
if rec.returncode not in (0, 1) or summary_row is None:
    fail(f"dd_reconcile exit {rec.returncode}: {rec.stderr.strip()}")
want_rc = 0 if all(v == "delivered" for v in fs_outcome.values()) and not lost else 1
if rec.returncode != want_rc:
    fail(f"dd_reconcile exit {rec.returncode}, want {want_rc}")
for r in extra:
    fail(f"dd_reconcile: {r['path']} not in manifest ({r['log']})")
if summary_row and any(summary_row["unmatched_in_logs"].values()):
    fail(f"dd_reconcile: log lines no manifest line names: {summary_row['unmatched_in_logs']}")
for e in sent:
    rel = e["path"]
    r = by_path.get(rel)
    want = fs_outcome.get(rel)
    if r is None:
        fail(f"dd_reconcile: no row for {rel}")
    elif want is None:
        continue  # already a failure above
    elif r["outcome"] != want:
        fail(f"dd_reconcile: {rel}: {r['outcome']} ({r['detail']}; {r['notes']}), "
             f"the output folder says {want}")
    elif want == "failed":
        m = re.search(r"; record: (.*)$", r["detail"])
        recorded = os.path.basename(m[1]) if m else None
        held = records[(e["session"], e["file_id"])][0][0]
        if recorded != held:
            fail(f"dd_reconcile: {rel}: record {recorded}, the failed folder holds {held}")

# --- Summary.
by_trigger = {}
by_landing = {}
for k in kills:
    by_trigger[k["trigger"]] = by_trigger.get(k["trigger"], 0) + 1
    by_landing[k["landed"]] = by_landing.get(k["landed"], 0) + 1
twice = sum(1 for r in by_path.values() if any("logged Passed again" in n for n in r["notes"]))
recovered = sum(1 for r in by_path.values()
                if any("delivered by an earlier run" in n for n in r["notes"]))
print(f"crash_test: {len(kills)} kills in {elapsed:.0f} s, {len(runs)} receiver runs")
print("  by trigger: " + ", ".join(f"{k} {v}" for k, v in by_trigger.items()))
print("  where they landed: " + ", ".join(f"{k} {v}" for k, v in sorted(by_landing.items())))
reasons = {}
e_by_path = {e["path"]: e for e in sent}
for rel, v in fs_outcome.items():
    if v == "failed":
        e = e_by_path[rel]
        why = records[(e["session"], e["file_id"])][0][1].get("reason", "")
        why = re.sub(r" \(.*", "", why.split(":")[0])
        reasons[why] = reasons.get(why, 0) + 1
n_del = sum(1 for v in fs_outcome.values() if v == "delivered")
n_fail = sum(1 for v in fs_outcome.values() if v == "failed")
print(f"  files: {len(sent)} sent, {n_del} delivered ({recovered} synced at a restart, {twice} "
      f"logged Passed twice), {n_fail} failed and named, {len(lost)} lost or named twice")
print("  failure reasons: " + ", ".join(f"{k}: {v}" for k, v in sorted(reasons.items())))
if len(kills) < KILLS_MIN:
    fail(f"only {len(kills)} kills (want {KILLS_MIN} or more)")
for trig in QUOTA:
    if by_trigger.get(trig, 0) == 0 and trig != "failure records":  # (no list may come in time)
        fail(f"no kill aimed at {trig}")
if n_del == 0 or n_fail == 0:
    fail(f"{n_del} delivered and {n_fail} failed: the test aimed at nothing")
if failures:
    print(f"crash_test: {len(failures)} failure(s); the receive log's lines of the first files:")
    shown = 0
    with open(rx_log, errors="replace") as f:
        log = f.readlines()
    jrows = journal()
    for rel in lost[:5]:
        print(f"--- {rel}")
        for line in log:
            if rel in line:
                print("  " + line.rstrip())
        print("  journal: " + ", ".join(f"{k} {i}" for k, _, i, p in jrows if p == rel))
    if os.environ.get("DDFT_CRASH_KEEP"):
        keep = os.environ["DDFT_CRASH_KEEP"]
        subprocess.run(["cp", "-a", work, keep])
        print(f"crash_test: work folder copied to {keep}")
    sys.exit(1)
print("crash_test: passed")
PY
