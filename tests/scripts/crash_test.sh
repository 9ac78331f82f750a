#!/usr/bin/env bash
# Crash points: the receiver killed with SIGKILL at 50 and more points of one multi-file transfer,
# and restarted at once on the same output folder and port while the sender goes on (a diode has
# no back channel: the sender never knows). What a passing run proves:
#
# 1. Every line of the send manifest has exactly one outcome, checked field by field. Its path,
#    size, verify type and key match the source file (the key is the first 32 bits of the
#    source's XXH3-128, from libxxhash, which the receiver links too), its session is the one
#    logged, its file id is unique. Delivered: under its final name, byte-identical to its source
#    with the source's modification time, no failure record, a journal P line with its size and
#    full digest, no F line, and every "File: ... Passed" line with the manifest's key and size.
#    Failed: not under its final name, exactly one failure record (name, size, verify type,
#    expected key when known), a journal F line of its size and no P line, no Passed line, and a
#    FAILED line (more than one only when a later run's start-up names it again after a kill).
#    dd_reconcile's report says the same of each file: outcome, session, file id, size, key, the
#    received key of a delivery, the record of a failure. No temporary file (.ddft-*.part,
#    .ddft-*.meta) remains anywhere, and nothing is in the output folder that was not sent, but
#    the receiver's state folder (.ddft: journal, replay state, record reserve, failed folder).
# 2. Only files a kill explains fail. At each kill the test notes the files in flight: those
#    the killed run announced and had not logged Passed or FAILED, those whose temporary file is
#    there, and the file the kill was aimed at. A failure's reason names what may explain it:
#    "the receiver stopped ... found at start-up": in flight at a kill before its FAILED line;
#    "never announced to this receiver: sent before its first packet ..." (the sender's file list
#    named a file no run heard) and "started before this receiver" (joined mid-file): in flight
#    at a kill, or on the wire while no receiver listened, that is sent (from the manifest's line
#    of the file before it on its own channel to its own) after the last file of its channel any
#    run had announced before a kill, ending no earlier than the kill less a slack, starting
#    before the next run that came up logged its readiness; the slack is the longest any file's
#    announce took in this run from the start of its sending to the log, plus 0.25 s (the data a
#    killed receiver had not yet read); "X (an earlier run ... recorded it and stopped before
#    logging it)": X explained as above. Any other reason, or a failure nothing explains, fails
#    the test, naming the file. (With one channel, "its channel" is the whole send order.)
# 3. Every window below is hit at least once, or the run fails naming it. A kill lands in the
#    windows of the files in flight, from each one's state once the receiver is dead: its
#    temporary file's size (the data reaches the disk a 1 MiB write block at a time) and its
#    mode and time (the commit sets them just before the flush), the journal's lines for it
#    (C before the rename, P after the Passed line, F while failing), its final name and its
#    Passed line:
#      announce      killed at the instant the file's "... receiving" line appeared (not a
#                    file joined mid-file), before its data was whole on disk
#      mid-data      a temporary file holding some of its data but not all
#      verify        a temporary file whole, its commit not begun: the digest, which streams
#                    as in-order data arrives, is checked, and the file waits for the flush (a
#                    read-back verify needs data out of order, which loopback does not give)
#      flush         a temporary file whole with its mode and time set, and no journal C line
#      rename        the journal's C line written and no Passed line: around the rename and
#                    its folder sync ("journal C, before rename" is a few calls wide and
#                    seldom hit; "renamed, before Passed" is the folder sync)
#      hook          the --on-complete hook running (the armed hook tells the test)
#      start-up      a restarted run killed before it logged its readiness (a few ms in:
#                    reading its journal, or recovering what the kill before left; the kill
#                    line says how many of the temporary files left it had handled)
#      failure records  killed at the instant a "FAILED: never announced" line appeared, while
#                    the run names the files the sender's list says no run heard
#    The kills are aimed (the trigger) from the receive log and the output folder as the test
#    watches them (every 1-2 ms; a file's end every 0.2 ms): at an announce, at a random instant
#    into a file (or while no file is announced for a second), at a file's end (as soon as it
#    is whole, as soon as its mode and time are set, as soon as its final name appears, or at a
#    random instant up to its sync time), while the hook runs, a few ms into a restart, and at
#    a "FAILED: never announced" line. A window no kill has landed in yet is aimed at first, on
#    a file that can serve it, and runs use --direct-io off until a flush was hit (the data of
#    a file then waits in the page cache for its sync, a longer window). The summary gives the
#    kills per trigger and per window, the states the files in flight were in, and how many
#    files the kills could have excused, next to how many failed.
#
# Usage: crash_test.sh DD_FILE_SEND DD_FILE_RECEIVE DD_RECONCILE
# DDFT_CRASH_SEED=N makes the same files and the same choices again (not the same timing);
# DDFT_CRASH_CHANNELS=0|1 forces one channel or two (else the seed draws it, half and half);
# DDFT_CRASH_KEEP=DIR keeps a copy of the work folder; DDFT_CRASH_DEBUG=1 says what it aims at
# and how it explains each failure. DDFT_CRASH_STARTUP=recovery aims each start-up kill at the
# recovery itself (as soon as one of the temporary files left is gone): the receiver journals
# each leftover's failure under its record's name before it writes the record and removes the
# data, so a kill anywhere in there must still leave exactly one record naming the file.
#
# The transfer: one sender session at a paced 2.5 MiB/s of about 180 MB: 416 small
# files (0 to 512 KiB, some empty) in nested folders, "report.txt" in 32 folders, 48 files of
# 1-3 MiB and 3 of 16-20 MiB, spread through the send order. Its files are named so that the
# sender's sorted order mixes the sizes. The receiver runs the default --write-mode (rwd: each
# file synced before its rename and its Passed line), a 64 MB buffer, and an --on-complete hook;
# each run picks --direct-io auto or off. Kills stop once 94% of the data was sent, so that the
# last run gets the sender's final file list and names whatever went while no receiver ran.
#
# Two channels (about half the runs, as the seed draws): the same files, 5 of the 16 top folders
# (one with a big file) sent as channel bulk (class 1, min-share 30%) and the rest as urgent
# (class 0), SRC/NAME/... received as OUT/NAME/...; at their shares of the link the two send
# side by side until near the end, their files interleaved block by block on the wire, so a kill
# finds files of both in flight. Each file is checked as above, its manifest line naming its
# channel too. A channel sends its files in the manifest's order, so the send-order rules of
# point 2 hold per channel. The aiming paces a file at its channel's share while the other
# channel has files left. A kill aimed at a file holds every other kill back until it comes:
# one aimed at a file's end is made only on a file sent within 2.5 s (a big file's: 10 s), and
# a mid-data kill comes 8 s into its file at most. The run fails unless the channels sent side
# by side for half the transfer or more, with a big file of each among the files sent so, and 5
# kills or more found files of both in flight; the summary gives each channel's files and
# failures.
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
import ctypes
import datetime
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
# One channel or two: drawn from the seed (the draw is made either way, so that forcing the mode
# the seed drew changes nothing else).
TWO = rng.random() < 0.5
if os.environ.get("DDFT_CRASH_CHANNELS") in ("0", "1"):
    TWO = os.environ["DDFT_CRASH_CHANNELS"] == "1"
elif os.environ.get("DDFT_CRASH_CHANNELS"):
    sys.exit("crash_test: DDFT_CRASH_CHANNELS is 0 or 1")
print(f"crash_test: seed {seed}, {'two channels' if TWO else 'one channel'} "
      f"(DDFT_CRASH_SEED={seed} DDFT_CRASH_CHANNELS={int(TWO)} gives the same files and choices)",
      flush=True)

RATE_MB = 2.5                     # the sender's --rate, MiB/s
KILLS_WANTED = 75                 # spread over the transfer
SETTLE_S = 0.15                   # a new run receives this long before its next kill
KILLS_MIN = 50                    # fewer: the test fails
QUOTA = {"announce": 10, "mid-data": 12, "end of file": 16, "hook": 10, "start-up": 4,
         "failure records": 4}
# The windows every run must kill the receiver in at least once (see the header).
WINDOWS = ("announce", "mid-data", "verify", "flush", "rename", "hook", "start-up",
           "failure records")
COMMIT = ("verify", "flush", "rename")  # a file's commit, in its order
BIG_END_KILLS = 2                 # "end of file" kills on the 16-20 MiB files (--direct-io off)
END_S = 2.5                       # a file's end aimed at only if it is sent within this many s,
BIG_END_S = 10                    # a big file's within this many (no other kill until it comes)
MID_DATA_S = 8                    # a mid-data kill this long after its file's announce at most
STOP_AT = 0.94                    # no kill once this share of the bytes was sent
AIM_RECOVERY = os.environ.get("DDFT_CRASH_STARTUP") == "recovery"
# Two channels: each one's files are SRC/NAME/..., sent as NAME/... and received in OUT/NAME/.
# urgent is strict priority over bulk, which keeps its minimum share while urgent has data: the
# link's share each has while both send (their pace, for aiming).
CHANNELS = {"urgent": "class=0", "bulk": "class=1,min-share=30%"} if TWO else {}
SHARE = {"urgent": 0.7, "bulk": 0.3}
BOTH_MIN = 5                      # kills with files of both channels in flight, at least
src = os.path.join(work, "src")
out = os.path.join(work, "out")
state = os.path.join(out, ".ddft")  # the receiver's state folder (receiver/delivery/state_dir.hpp)
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


# --- The digest the sender sends and the receiver checks (B2B: XXH3-128, canonical bytes), from
# the library the receiver itself links.
class _Xxh128(ctypes.Structure):
    _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]


try:
    _xxh = ctypes.CDLL("libxxhash.so.0")
except OSError as e:
    sys.exit(f"crash_test: cannot load libxxhash.so.0 (the receiver's own dependency): {e}")
_xxh.XXH3_128bits.restype = _Xxh128
_xxh.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def digest_of(path):
    with open(path, "rb") as f:
        data = f.read()
    h = _xxh.XXH3_128bits(data, len(data))
    return f"{h.high64:016x}{h.low64:016x}"


# --- The files to send. With two channels, bulk gets five of the sixteen folders, one of the
# three with a big file among them, and urgent the rest: about 70% of the bytes go to urgent, so
# that the two channels, at their shares of the link, send side by side until near the end.
BIG = (3, 8, 13)  # the folders with a big file


def make_tree():
    syl = ["ka", "lo", "mi", "nu", "pe", "ra", "si", "to", "vu", "ze", "bo", "di"]
    word = lambda: rng.choice(syl) + rng.choice(syl)
    bulk = {rng.choice(BIG)} | set(rng.sample([g for g in range(16) if g not in BIG], 4))
    files = {}  # relative path (with its channel's folder first) -> size
    for g in range(16):
        top = (("bulk/" if g in bulk else "urgent/") if TWO else "") + f"g{g:02d}"
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
        if g in BIG:
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
src_mtime = {rel: os.stat(os.path.join(src, rel)).st_mtime_ns for rel in files}
total = sum(files.values())
expected_s = total / (RATE_MB * (1 << 20))
print(f"crash_test: {len(files)} files, {total:,} bytes: about {expected_s:.0f} s at "
      f"{RATE_MB} MB/s", flush=True)


def channel_of(rel):
    """The channel REL is sent on ("" with one channel): its first folder."""
    return rel.split("/", 1)[0] if TWO else ""


for name in CHANNELS:
    mine = [size for rel, size in files.items() if channel_of(rel) == name]
    print(f"  channel {name} ({CHANNELS[name]}): {len(mine)} files, {sum(mine):,} bytes, "
          f"{sum(1 for size in mine if size >= 16 << 20)} big", flush=True)

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
PASSED = re.compile(r"File: (?P<path>.*), Trans: (?P<trans>[\d,]+) \(bytes\), .*, "
                    r"Key: (?P<key>0x[0-9A-F]{8}|none), \S+ Passed$")
FAILED = re.compile(r"Error: (?P<path>.*?) FAILED: (?P<reason>.*)$")
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
log_lines = []     # (run index, wall clock when the test read it, the line), every run's


# --- Receiver runs.
class Run:
    def __init__(self, index, direct_io):
        self.index = index
        self.direct_io = direct_io
        self.up = False
        self.in_flight = {}  # path -> size, announced by this run and not finished
        self.quiet_since = None  # its start line, then its last announce
        self.up_at = None  # its start line (monotonic)
        self.up_wall = None  # the same on the wall clock (the manifest's clock)
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
    """(kind, session, id, path, fields) of each line of the receiver's journal; fields are the
    line's words (size at 3, digest at 5 for P and F lines)."""
    rows = []
    try:
        with open(os.path.join(state, "outcomes"), encoding="utf-8", errors="replace") as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 6)
                if len(parts) == 7:
                    try:
                        path, _ = json.JSONDecoder().raw_decode(parts[6])
                        rows.append((parts[0], parts[1], int(parts[2]), path, parts))
                    except ValueError:
                        pass
    except FileNotFoundError:
        pass
    return rows


TEMPORARY = re.compile(r"\.ddft-[0-9a-f]{16}-\d+\.(part|meta)")
OWN_FILES = {"outcomes", "session-state", "record-reserve", "sender-status.json"}


def temporaries():
    """The receiver's temporary files anywhere under the output folder (state and failed folders
    too), a name of its own in the output folder's top (it keeps none there), and what its state
    folder holds beyond its own files (a rewrite's .new, say)."""
    found = []
    for dirpath, _, filenames in os.walk(out):
        for name in filenames:
            if (TEMPORARY.fullmatch(name) or (dirpath == out and name.startswith(".ddft"))
                    or (dirpath == state and name not in OWN_FILES)):
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


# --- Where a file was when the receiver died (it is dead: nothing moves), from its temporary
# file (size; its mode and time, which the commit sets just before the flush), the journal's
# lines (C before the rename, P after the Passed line, F when failing), its final name and its
# Passed line; and the window each state is in.
NO_TEMP = "announced, no temporary file"
EMPTY = "temporary file empty"
PARTIAL = "mid-data"
WHOLE = "data whole, commit not begun (verify)"
FLUSHING = "mode and time set, no journal C (flush)"
JOURNAL_C = "journal C, before rename"
RENAMED = "renamed, before Passed (folder sync)"
FAILING = "failing (journal F)"
AFTER_PASSED = "logged Passed, before journal P"
DONE = "done (journal P)"
WINDOW_OF = {PARTIAL: "mid-data", WHOLE: "verify", FLUSHING: "flush", JOURNAL_C: "rename",
             RENAMED: "rename"}


def landed(rel, rows):
    kinds = {k for k, _, _, p, _ in rows if p == rel}
    if "P" in kinds:
        return DONE
    if rel in passed:
        return AFTER_PASSED
    if os.path.exists(os.path.join(out, rel)):
        return RENAMED
    if "C" in kinds:
        return JOURNAL_C
    if "F" in kinds:
        return FAILING
    part = find_part(rel)
    if part is None:
        return NO_TEMP
    st = os.stat(part)
    if st.st_size == files[rel]:
        return FLUSHING if st.st_mtime_ns == src_mtime[rel] else WHOLE
    return EMPTY if st.st_size == 0 else PARTIAL


kills = []          # dicts
done_by_trigger = {k: 0 for k in QUOTA}
hits = {w: 0 for w in WINDOWS}      # kills that landed in each window
tries = {w: 0 for w in WINDOWS}     # kills aimed at each window while it had no hit
big_end = 0


def kill_now(run, trigger, target, detail="", aimed=None):
    """SIGKILL, then what the receive log said last, which files were in flight (for the
    failures they may explain) and where each was (the windows the kill landed in)."""
    wall = time.time()
    run.proc.send_signal(signal.SIGKILL)
    run.proc.wait()
    for msg in tail.lines():  # the last lines the killed run wrote
        note_line(run, msg, live=False)
    rows = journal()
    states = {p: landed(p, rows) for p in set(run.in_flight) | ({target} if target else set())}
    part_files = {p for p in temporaries() if p.endswith(".part")}
    parts = {origin_path(p) or p for p in part_files}
    if trigger == "start-up":
        # How far its recovery came: the temporary files the kill before left, gone now.
        left = kills[-1]["part_files"] if kills else set()
        detail = f"({len(left - part_files)} of {len(left)} leftovers recovered)"
    windows = {WINDOW_OF[s] for s in states.values() if s in WINDOW_OF}
    where = states.get(target, "-")
    if trigger == "announce" and where in (NO_TEMP, EMPTY, PARTIAL) and "joined" not in detail:
        windows.add("announce")
    if trigger in ("hook", "failure records") or (trigger == "start-up" and not run.up):
        windows.add(trigger)
    if aimed and hits[aimed] == 0:
        tries[aimed] += 1
    for w in windows:
        hits[w] += 1
    k = {"n": len(kills) + 1, "t": time.monotonic() - t_send, "wall": wall, "run": run.index,
         "direct_io": run.direct_io, "trigger": trigger, "target": target or "-",
         "landed": where, "states": states, "windows": windows, "last": run.last,
         "detail": detail, "lines": len(log_lines), "part_files": part_files,
         "in_flight": set(run.in_flight) | parts | ({target} if target else set())}
    kills.append(k)
    done_by_trigger[trigger] = done_by_trigger.get(trigger, 0) + 1
    print(f"kill {k['n']:2d} at {k['t']:5.1f} s, run {run.index} (direct-io {run.direct_io}): "
          f"{trigger}{' ' + detail if detail else ''}; {k['target']}: {where}; windows: "
          f"{', '.join(w for w in WINDOWS if w in windows) or '-'}; log last: {run.last[:90]}",
          flush=True)
    for name in glob.glob(os.path.join(work, "hook.*")):
        if not name.endswith(".sh"):
            os.unlink(name)


def note_line(run, msg, live):
    global session
    if not msg:
        return None
    log_lines.append((run.index, time.time(), msg))
    run.last = msg
    m = SESSION.match(msg)
    if m:
        session = m[1]
    if msg.startswith("Info: receiving on "):
        run.up = True
        run.up_at = run.quiet_since = time.monotonic()
        run.up_wall = time.time()
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
    """Bytes the sender has sent, from its manifest's lines as they are appended; and the files
    each channel has sent."""

    def __init__(self):
        self.tail = Tail(manifest)
        self.bytes = 0
        self.done = {name: 0 for name in CHANNELS}  # files each channel has sent
        self.count = {name: sum(1 for rel in files if channel_of(rel) == name) for name in CHANNELS}

    def sent(self):
        for line in self.tail.lines():
            try:
                e = json.loads(line)
            except ValueError:
                continue
            self.bytes += e.get("size") or 0
            if e.get("channel") in self.done:
                self.done[e["channel"]] += 1
        return self.bytes

    def pace(self, rel):
        """The bytes a second REL's file is sent at: the link's rate, or with two channels its
        channel's share of it while the other channel has files left."""
        rate = RATE_MB * (1 << 20)
        name = channel_of(rel)
        if any(self.done[c] < self.count[c] for c in CHANNELS if c != name):
            rate *= SHARE[name]
        return rate


def choose(size, joined, waited, run, took):
    """(trigger, goal) to aim at a file of SIZE just announced to RUN (JOINED: mid-file, so
    with no announce and no end to aim at), WAITED s after the kill was due; the file takes
    TOOK s to send, and its end is aimed at only within END_S. A window no kill has landed in
    yet comes first (the one tried least so far, among those this file can serve); then the
    trigger furthest behind its quota. (None, None): wait for a larger file while only the
    triggers that need one are behind (for 1.5 s at most)."""
    if size >= 16 << 20:
        return "mid-data", None  # (its "end of file" kills are aimed apart)
    can = ["hook"]
    if size >= 192 << 10 and not joined:
        can += ["announce"]  # (a smaller file is often whole by the time the kill lands)
    if size > 1 << 20:
        can += ["mid-data"]
    if size >= 128 << 10 and not joined and took <= END_S:
        can += ["verify", "rename"] + (["flush"] if run.direct_io == "off" else [])
    missing = [w for w in can if hits[w] == 0]
    if missing:
        least = min(tries[w] for w in missing)
        w = rng.choice([w for w in missing if tries[w] == least])
        return ("end of file", w) if w in COMMIT else (w, None)
    options = ["hook"] + (["announce"] if hits["announce"] or size >= 64 << 10 else [])
    if size >= 64 << 10:
        options.append("mid-data")
        options += ["end of file"] if took <= END_S else []
    behind = {o: QUOTA[o] - done_by_trigger[o] for o in ("announce", "hook", "mid-data",
                                                          "end of file")}
    mine = [o for o in options if behind[o] > 0]
    if mine:
        most = max(behind[o] for o in mine)
        trigger = rng.choice([o for o in mine if behind[o] == most])
    elif any(v > 0 for v in behind.values()) and waited < 1.5:
        return None, None
    else:
        trigger = rng.choice(options)
    return trigger, (rng.choice(COMMIT + ("random",)) if trigger == "end of file" else None)


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


def direct_io_for_next_run():
    # A flush is wide only for data still in the page cache: --direct-io off until one landed.
    return "off" if hits["flush"] == 0 else rng.choice(["auto", "off"])


runs = [Run(1, direct_io_for_next_run())]
if not wait_up(runs[0]):
    with open(os.path.join(work, "rx-console.log"), errors="replace") as f:
        print(f.read())
    sys.exit("crash_test: the receiver did not start")
# The source folder, or each channel's folder as its --channel.
what = [a for name, how in CHANNELS.items()
        for a in ("--channel", f"{name}:source={src}/{name}/,{how}")] or [src + "/"]
t_send = time.monotonic()
t_send_wall = time.time()
with open(os.path.join(work, "tx.log"), "wb") as tx_out:
    sender = subprocess.Popen(
        [send_bin, *what, "--dest", f"127.0.0.1:{port}", "--rate", str(RATE_MB),
         "--manifest", manifest, "--heartbeat-ms", "100"],
        stdin=subprocess.DEVNULL, stdout=tx_out, stderr=subprocess.STDOUT)
remember(sender)

gap = STOP_AT * expected_s / KILLS_WANTED
progress = Progress()
target = None      # the kill being aimed: dict
stopped = False


def aim(trigger, goal, path, size, now, joined):
    """Sets the target for TRIGGER (GOAL: where in the commit, for "end of file") at the file
    PATH of SIZE just announced; returns the kill to make at once (announce) or None."""
    global target, big_end
    if trigger == "end of file" and joined:
        trigger, goal = "mid-data", None  # it cannot be whole: no end to aim at
    debug(f"aim {trigger} {goal or ''} at {path} ({size:,} bytes)")
    if trigger == "announce":
        return ("announce", path, "(joined mid-file)" if joined else "", "announce")
    if trigger == "mid-data":
        # Its data reaches the disk a write block (1 MiB) at a time: past the first block when
        # no kill has landed mid-data yet.
        low = min(0.9, (1 << 20) / size + 0.1) if hits["mid-data"] == 0 and size > 1 << 20 \
            else 0.05
        delay = min(rng.uniform(low, max(low, 0.9)) * max(size, 1) / progress.pace(path),
                    MID_DATA_S)
        target = {"trigger": trigger, "path": path, "at": now + delay,
                  "detail": f"{delay * 1000:.0f} ms into {size:,} bytes", "aimed": "mid-data"}
    elif trigger == "end of file":
        if size >= 16 << 20:
            big_end += 1
        target = {"trigger": trigger, "goal": goal, "path": path, "size": size, "at": None,
                  "part": None, "aimed": goal if goal in COMMIT else None,
                  "give_up": now + 1.5 * size / progress.pace(path) + 3}
    else:
        open(os.path.join(work, "hook.arm"), "w").close()
        target = {"trigger": "hook", "path": None, "give_up": now + 10, "aimed": "hook"}
    return None


def commit_stage(t):
    """How far the target file T is, seen from outside: (stage, bytes written). Stage None: its
    data is not whole yet; a COMMIT stage: its temporary file whole with its mode and time
    unset (verify), set (flush), or its final name there (rename or later); "gone": neither
    (it failed)."""
    if t["part"] is None:
        t["part"] = find_part(t["path"])
    st = None
    if t["part"] is not None:
        try:
            st = os.stat(t["part"])
        except OSError:
            pass
    if st is not None:
        if st.st_size < t["size"]:
            return None, st.st_size
        return ("flush" if st.st_mtime_ns == src_mtime[t["path"]] else "verify"), st.st_size
    if os.path.exists(os.path.join(out, t["path"])):
        return "rename", t["size"]
    return ("gone" if t["part"] is not None else None), 0


def watch_commit(run, t):
    """Watches the target file's end closely (every 0.2 ms, nothing else meanwhile), from its
    last bytes to its commit, and kills the receiver as soon as the file has reached the stage
    aimed at (a random instant up to its read-back and sync time for "random"). Returns True
    when it killed; False when the file failed or stalled (the target is dropped)."""
    rate = progress.pace(t["path"])
    end = time.monotonic() + 1.0 + 2 * (t["size"] - commit_stage(t)[1]) / rate
    while time.monotonic() < end:
        stage, _ = commit_stage(t)
        now = time.monotonic()
        if stage == "gone":
            break
        if stage is not None and t["goal"] == "random":
            if t["at"] is None:
                window = 0.001 + t["size"] / (150e6 if t["size"] >= 16 << 20 else 300e6)
                delay = rng.uniform(0, window)
                t["at"] = now + delay
                t["detail"] = f"{delay * 1000:.1f} ms after its data was whole"
            if now >= t["at"]:
                kill_now(run, t["trigger"], t["path"], t["detail"])
                return True
        elif stage is not None and COMMIT.index(stage) >= COMMIT.index(t["goal"]):
            kill_now(run, t["trigger"], t["path"], f"(aimed at its {t['goal']}, saw {stage})",
                     t["aimed"])
            return True
        time.sleep(0.0002)
    debug(f"give up {t['path']}: {commit_stage(t)}")
    return False


def big_end_due(path, size, joined, run, now):
    """Whether to aim at the end of the big file PATH of SIZE just announced to RUN: while
    fewer than BIG_END_KILLS were, with --direct-io off, on a file sent within BIG_END_S that
    ends before the kills stop."""
    took = size / progress.pace(path)
    return size >= 16 << 20 and not joined and big_end < BIG_END_KILLS and \
        run.direct_io == "off" and took <= BIG_END_S and \
        now + took < t_send + STOP_AT * expected_s


def main_loop():
    global target, stopped
    while sender.poll() is None:
        time.sleep(0.001 if target and target["trigger"] == "end of file" else 0.002)
        run = runs[-1]
        now = time.monotonic()
        if run.proc.poll() is not None:
            fail(f"receiver run {run.index} exited by itself (status {run.proc.returncode})")
            return
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
            if "FAILED: never announced" in msg and (hits["failure records"] == 0 or (
                    target is None and now >= due and
                    done_by_trigger["failure records"] < QUOTA["failure records"])):
                m = FAILED.match(msg)
                target = None
                fire = ("failure records", m[1] if m else None, "", "failure records")
            elif target is None and announced:
                path, size = announced
                joined = "(joined mid-file" in msg
                if big_end_due(path, size, joined, run, now):
                    goal = "flush" if hits["flush"] == 0 else rng.choice(COMMIT + ("random",))
                    fire = aim("end of file", goal, path, size, now, joined)  # due or not
                elif now >= due:
                    trigger, goal = choose(size, joined, now - due, run,
                                           size / progress.pace(path))
                    if trigger is not None:
                        fire = aim(trigger, goal, path, size, now, joined)
            elif target and target["trigger"] == "end of file":
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
            target = {"trigger": "mid-data", "path": path, "at": now + delay, "aimed": None,
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
                    kill_now(run, "hook", path, "(while its hook ran)", "hook")
                elif now > t["give_up"]:
                    debug("give up the hook")
                    target = None
            elif t["trigger"] == "end of file":
                stage, have = commit_stage(t)
                # Its last write block to come (the data reaches the disk 1 MiB at a time), or
                # less: watched closely from now.
                if stage is not None or have >= t["size"] - (1 << 20) - (128 << 10):
                    target = None
                    if stage != "gone":
                        watch_commit(run, t)
                elif now > t["give_up"]:
                    debug(f"give up {t['path']}")
                    target = None
            elif now >= t["at"]:
                target = None
                kill_now(run, t["trigger"], t["path"], t.get("detail", ""), t["aimed"])
        if runs[-1].proc.poll() is None:
            continue
        # Killed: restart at once; now and then (every time after the first few kills while
        # none has landed in one) kill the new run during its start-up: a few ms in, or with
        # DDFT_CRASH_STARTUP=recovery as soon as one of the temporary files the kill left is gone.
        runs.append(Run(len(runs) + 1, direct_io_for_next_run()))
        left = kills[-1]["part_files"]
        if (hits["start-up"] == 0 and len(kills) >= 6) or (
                QUOTA["start-up"] > done_by_trigger["start-up"] and rng.random() < 0.15):
            if AIM_RECOVERY and left:
                end = time.monotonic() + 2.0
                while time.monotonic() < end and all(os.path.exists(p) for p in left):
                    time.sleep(0.0001)
            else:
                time.sleep(rng.uniform(0.003, 0.06))
            kill_now(runs[-1], "start-up", None, "", "start-up")
            runs.append(Run(len(runs) + 1, direct_io_for_next_run()))
        if not wait_up(runs[-1]):
            fail(f"receiver run {runs[-1].index} did not start")
            return


def drain():
    """The last run drains: the sender's final file list, the last files' syncs, the hooks;
    then the log and the folder stay quiet (a file that lost its end would wait
    --file-timeout)."""
    run = runs[-1]
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


try:
    main_loop()
    rc = sender.wait()
    if rc != 0:
        fail(f"sender exit status {rc}")
    drain()
finally:
    for p in children:
        if p.poll() is None:
            p.kill()
            p.wait()
for msg in tail.lines():
    note_line(runs[-1], msg, live=False)
elapsed = time.monotonic() - t_send

# --- What became of every file: the manifest's line, the source, the output folder, the failed
# folder, the journal and the receive log, field by field.
sent = []
with open(manifest) as f:
    for number, line in enumerate(f, 1):
        if line.strip():
            try:
                sent.append(json.loads(line))
            except ValueError:
                fail(f"manifest line {number} is not JSON: {line.strip()[:100]}")
if len(sent) != len(files):
    fail(f"the manifest has {len(sent)} lines for {len(files)} files")
src_digest = {rel: digest_of(os.path.join(src, rel)) for rel in files}
records = {}
failed_dir = os.path.join(state, "failed")
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


jrows = journal()
j_by_file = {}
for kind, sess, fid, path, parts in jrows:
    j_by_file.setdefault((sess, fid), []).append((kind, path, parts))
passed_lines, failed_lines = {}, {}  # path -> [(position in log_lines, run, match)]
for pos, (ri, _, msg) in enumerate(log_lines):
    for regex, into in ((PASSED, passed_lines), (FAILED, failed_lines)):
        m = regex.match(msg)
        if m:
            into.setdefault(m["path"], []).append((pos, ri, m))


def check_line(e, seen_ids):
    """The manifest line E against the source file it names; False when it names none."""
    rel = e["path"]
    if e.get("status") != "sent":
        fail(f"{rel}: the sender could not send it: {e.get('reason')}")
    if rel not in files:
        fail(f"manifest line of {rel!r}: no such file was sent")
        return False
    key = "0x" + src_digest[rel][:8].upper()
    for field, want in (("size", files[rel]), ("verify", "B2B"), ("key", key),
                        ("session", session), ("channel", channel_of(rel) or None)):
        if e.get(field) != want:
            fail(f"{rel}: the manifest's {field} is {e.get(field)!r}, want {want!r}")
    if (e["session"], e["file_id"]) in seen_ids:
        fail(f"{rel}: the manifest's file id {e['file_id']} is given twice")
    seen_ids.add((e["session"], e["file_id"]))
    return True


def check_delivered(e):
    rel, size = e["path"], e["size"]
    if os.stat(os.path.join(out, rel)).st_mtime_ns != src_mtime[rel]:
        fail(f"{rel}: delivered with another modification time than its source's")
    rows = j_by_file.get((e["session"], e["file_id"]), [])
    if not any(k == "P" and p == rel and parts[3] == str(size) and parts[5] == src_digest[rel]
               for k, p, parts in rows):
        fail(f"{rel}: delivered, and the journal has no P line of its size and digest: "
             f"{[' '.join(parts[:6]) for _, _, parts in rows]}")
    if any(k == "F" for k, _, _ in rows):
        fail(f"{rel}: delivered, and the journal has an F line for it")
    lines = passed_lines.get(rel, [])
    if not lines:
        fail(f"{rel}: delivered, and no File: ... Passed line names it")
    for _, ri, m in lines:
        if m["key"] != e["key"] or int(m["trans"].replace(",", "")) != size:
            fail(f"{rel}: run {ri} logged it Passed with Key {m['key']} and {m['trans']} bytes; "
                 f"the manifest says {e['key']} and {size:,}")
    if rel in failed_lines:
        fail(f"{rel}: delivered, and logged FAILED: {failed_lines[rel][0][2]['reason'][:100]}")


def check_failed(e, rec_name, rec):
    rel, size = e["path"], e["size"]
    want = {"name": rel, "expected_size": size, "verify": e["verify"]}
    for field, value in want.items():
        if rec.get(field) != value:
            fail(f"{rel}: its record {rec_name} has {field} {rec.get(field)!r}, want {value!r}")
    if rec.get("expected_key") not in ("", src_digest[rel]):
        fail(f"{rel}: its record's expected_key {rec.get('expected_key')} is not its digest "
             f"{src_digest[rel]}")
    if not 0 <= (rec.get("bytes_received") or 0) <= size:
        fail(f"{rel}: its record says {rec.get('bytes_received')} bytes received of {size}")
    rows = j_by_file.get((e["session"], e["file_id"]), [])
    if not any(k == "F" and p == rel and parts[3] == str(size) for k, p, parts in rows):
        fail(f"{rel}: failed, and the journal has no F line of its size")
    if any(k == "P" for k, _, _ in rows):
        fail(f"{rel}: failed, and the journal has a P line for it")
    if rel in passed_lines:
        fail(f"{rel}: failed, and logged Passed by run {passed_lines[rel][0][1]}")
    if rel not in failed_lines:
        fail(f"{rel}: failed (record {rec_name}), and no FAILED line names it")


fs_outcome = {}   # path -> "delivered" | "failed"
lost = []
seen_ids = set()
for e in sent:
    if not check_line(e, seen_ids):
        continue
    rel = e["path"]
    final = os.path.join(out, rel)
    recs = records.get((e["session"], e["file_id"]), [])
    here = os.path.isfile(final)
    good = here and same(final, os.path.join(src, rel))
    if here and not good:
        fail(f"{rel}: under its final name but not identical to its source")
    if good and not recs:
        fs_outcome[rel] = "delivered"
        check_delivered(e)
    elif not here and len(recs) == 1:
        fs_outcome[rel] = "failed"
        check_failed(e, *recs[0])
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
    if rel_dir == ".ddft":
        dirnames[:] = []  # the state folder: temporaries() checks it
        continue
    for name in filenames:
        rel = os.path.normpath(os.path.join(rel_dir, name))
        if rel in names:
            continue
        if not TEMPORARY.fullmatch(name):  # (those failed above)
            fail(f"{rel}: in the output folder, sent by no one")
ids = {(e["session"], e["file_id"]) for e in sent}
for key, recs in records.items():
    if key not in ids:
        fail(f"failure record(s) {[r[0] for r in recs]} of a file that was not sent: {key}")
for rel in sorted(set(failed_lines) - set(fs_outcome)):
    if rel not in lost:
        fail(f"{rel}: logged FAILED, and no manifest line names it")

# --- dd_reconcile must say the same, field by field.
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
        continue
    for field in ("session", "file_id", "size", "key"):
        if r.get(field) != e.get(field):
            fail(f"dd_reconcile: {rel}: {field} {r.get(field)!r}, the manifest says "
                 f"{e.get(field)!r}")
    if want is None:
        continue  # already a failure above
    if r["outcome"] != want:
        fail(f"dd_reconcile: {rel}: {r['outcome']} ({r['detail']}; {r['notes']}), "
             f"the output folder says {want}")
    elif want == "delivered" and r.get("received_key") != e["key"]:
        fail(f"dd_reconcile: {rel}: received key {r.get('received_key')}, the manifest says "
             f"{e['key']}")
    elif want == "failed":
        m = re.search(r"; record: (.*)$", r["detail"])
        recorded = os.path.basename(m[1]) if m else None
        held = records[(e["session"], e["file_id"])][0][0]
        if recorded != held:
            fail(f"dd_reconcile: {rel}: record {recorded}, the failed folder holds {held}")

# --- Every failure explained by a kill (the header's point 2): in flight at a kill, or sent while
# no receiver listened, as its reason allows.
def wall_of(text):
    return datetime.datetime.fromisoformat(text).timestamp()


# A file's send index is its line's place in the manifest. A channel sends its files one after
# another in that order, the channels side by side: a file is on the wire from the line of the
# file before it on its own channel (the session's start for the channel's first) to its own.
order = {e["path"]: i for i, e in enumerate(sent)}
chan = [channel_of(e["path"]) for e in sent]
ends = [wall_of(e["time"]) + 0.001 for e in sent]  # (the times are cut to the millisecond)
starts, channel_end = [], {}
for i, e in enumerate(sent):
    starts.append(channel_end.get(chan[i], t_send_wall))
    channel_end[chan[i]] = wall_of(e["time"])
run_of = {r.index: r for r in runs}
# [position in log_lines]: for each channel, the highest send index of its files announced before
announced_upto = []
first_announced = {}  # send index -> the position in log_lines of its first announce line
highest, lags = {}, []
for pos, (ri, wall, msg) in enumerate(log_lines):
    announced_upto.append(dict(highest))
    m = ANNOUNCE.match(msg)
    if m and m["path"] in order:
        i = order[m["path"]]
        highest[chan[i]] = max(highest.get(chan[i], -1), i)
        first_announced.setdefault(i, pos)
        up = run_of[ri].up_wall
        if "(joined mid-file" not in msg and up is not None and starts[i] >= up:
            lags.append(wall - starts[i])
announced_upto.append(dict(highest))
slack = 0.25 + max(lags, default=0.0)
for k in kills:
    k["announced"] = announced_upto[k["lines"]]
    k["ready"] = next((r.up_wall for r in runs if r.index > k["run"] and r.up_wall), math.inf)


def unheard(k, i):
    # Sent after the last file of its channel announced before the kill; or, within the slack
    # before it, one no run had logged yet: the receiver logs a file's announce once its
    # temporary file is made on the file-system pool, whose calls finish in any order, so a later
    # file's line can come first and the kill land before this one's.
    logged = first_announced.get(i, math.inf) < k["lines"]
    return (i > k["announced"].get(chan[i], -1) or not logged) and starts[i] < k["ready"] and \
        ends[i] > k["wall"] - slack


def category(reason):
    if " (an earlier run of the receiver recorded it and stopped before logging it)" in reason:
        return "recorded"
    if reason.startswith(("the receiver stopped (crash, kill or power cut) while the file was "
                          "being received; found at start-up",
                          "the receiver stopped while the file was being received")):
        return "in flight"
    if reason.startswith("never announced to this receiver: sent before its first packet"):
        return "unheard"
    if reason.startswith("started before this receiver:"):
        return "joined"
    return None


def justify(rel, pos, reason):
    """Why REL could fail with REASON, logged at POS in log_lines: (kind, sentence), or None."""
    cat = category(reason)
    inner = category(reason.split(" (an earlier run")[0]) if cat == "recorded" else cat
    if cat is None or inner in (None, "recorded"):
        return None
    before = [k for k in kills if k["lines"] <= pos]
    flying = [k for k in before if rel in k["in_flight"]]
    if inner == "in flight" and not flying:
        return None
    if inner == "in flight" or flying:
        k = flying[-1]
        return "in flight at a kill", \
            f"in flight at kill {k['n']} ({k['states'].get(rel, 'its temporary file left')})"
    i = order[rel]
    down = [k for k in before if unheard(k, i)]
    if not down:
        return None
    k = min(down, key=lambda k: k["wall"] - ends[i])  # the kill its sending came closest to
    slack_used.append(k["wall"] - ends[i])
    return "sent while no receiver listened", \
        (f"sent {starts[i] - t_send_wall:.2f}-{ends[i] - t_send_wall:.2f} s (kill {k['n']} at "
         f"{k['wall'] - t_send_wall:.2f} s, the next run ready at "
         f"{k['ready'] - t_send_wall:.2f} s)")


unexplained = []  # files failed that no kill explains, for the report at the end
justified = {}  # kind of justification -> count
slack_used = []  # for each failure explained as sent unheard: how long before the kill it ended
for rel, outcome in fs_outcome.items():
    if outcome != "failed" or rel not in failed_lines:
        continue
    lines = failed_lines[rel]
    pos, ri, m = lines[0]
    why = justify(rel, pos, m["reason"])
    if why is None:
        unexplained.append(rel)
        fail(f"{rel}: failed, and no kill explains it: run {ri} logged \"{m['reason'][:160]}\"; "
             f"sent {starts[order[rel]] - t_send_wall:.2f}-{ends[order[rel]] - t_send_wall:.2f} s")
        continue
    kind = f"{category(m['reason'])}, {why[0]}"
    justified[kind] = justified.get(kind, 0) + 1
    debug(f"{rel}: {m['reason'][:60]}: {why[1]}")
    # Named again only by a later run's start-up, after a kill that came before the line saying
    # the earlier naming was in the log.
    for (p0, r0, _), (p1, r1, m1) in zip(lines, lines[1:]):
        if "found at start-up" not in m1["reason"] or r1 <= r0 or \
                not any(p0 < k["lines"] <= p1 for k in kills):
            fail(f"{rel}: logged FAILED by run {r0} and again by run {r1}, no kill between: "
                 f"{m1['reason'][:120]}")
n_failed = sum(1 for v in fs_outcome.values() if v == "failed")
# How much the kills could excuse: a check that excused most files would prove little.
excusable = {p for p in order for k in kills if p in k["in_flight"] or unheard(k, order[p])}

# --- Summary.
def channels_summary():
    """Two channels: each one's files and failures, how long both sent side by side, with a big
    file of each among the files sent so, and how many kills found files of both in flight."""
    last = {c: max((ends[i] for i in range(len(sent)) if chan[i] == c), default=t_send_wall)
            for c in CHANNELS}
    both_until = min(last.values())
    together = (both_until - t_send_wall) / max(max(last.values()) - t_send_wall, 1e-9)
    big_beside = {c: sum(1 for i, e in enumerate(sent) if chan[i] == c and
                         e["size"] >= 16 << 20 and starts[i] < both_until) for c in CHANNELS}
    both = sum(1 for k in kills if len({channel_of(p) for p in k["in_flight"] if p in files}) > 1)
    failed = {c: sum(1 for p, v in fs_outcome.items() if v == "failed" and channel_of(p) == c)
              for c in CHANNELS}
    print("  channels: " + "; ".join(
        f"{c} {chan.count(c)} files ({failed[c]} failed), its last at "
        f"{last[c] - t_send_wall:.1f} s, {big_beside[c]} big beside the other" for c in CHANNELS)
        + f"; both sending for {together:.0%} of the transfer; {both} kills with files of both "
        "in flight")
    if together < 0.5 or 0 in big_beside.values() or both < BOTH_MIN:
        fail(f"the channels sent side by side for {together:.0%} of the transfer, big files "
             f"beside the other channel {big_beside}, {both} kills with files of both in "
             f"flight (want half, a big file of each, {BOTH_MIN} kills): too little to prove")


by_trigger = {}
by_landing = {}
for k in kills:
    by_trigger[k["trigger"]] = by_trigger.get(k["trigger"], 0) + 1
    for s in k["states"].values():
        by_landing[s] = by_landing.get(s, 0) + 1
twice = sum(1 for r in by_path.values() if any("logged Passed again" in n for n in r["notes"]))
recovered = sum(1 for r in by_path.values()
                if any("delivered by an earlier run" in n for n in r["notes"]))
print(f"crash_test: {len(kills)} kills in {elapsed:.0f} s, {len(runs)} receiver runs")
print("  by trigger: " + ", ".join(f"{k} {v}" for k, v in by_trigger.items()))
print("  windows hit (kills): " + ", ".join(f"{w} {hits[w]}" for w in WINDOWS))
print("  kills aimed at each until its first hit: " +
      ", ".join(f"{w} {tries[w]}" for w in WINDOWS))
print("  where the files in flight were: " +
      ", ".join(f"{k} {v}" for k, v in sorted(by_landing.items())))
n_del = sum(1 for v in fs_outcome.values() if v == "delivered")
print(f"  files: {len(sent)} sent, {n_del} delivered ({recovered} synced at a restart, {twice} "
      f"logged Passed twice), {n_failed} failed and named, {len(lost)} lost or named twice")
print(f"  failures justified: {sum(justified.values())} of {n_failed}: " +
      ", ".join(f"{k} {v}" for k, v in sorted(justified.items())))
print(f"  slack {slack:.2f} s; the most a file sent unheard had ended before its kill: "
      f"{max(slack_used, default=0.0):.3f} s")
print(f"  files the kills could excuse: {len(excusable)} of {len(sent)} "
      f"({sum(1 for p in excusable if fs_outcome.get(p) == 'delivered')} of them delivered)")
if TWO:
    channels_summary()
if len(kills) < KILLS_MIN:
    fail(f"only {len(kills)} kills (want {KILLS_MIN} or more)")
for w in WINDOWS:
    if hits[w] == 0:
        fail(f"no kill landed in the {w} window ({tries[w]} aimed at it)")
if n_del == 0 or n_failed == 0:
    fail(f"{n_del} delivered and {n_failed} failed: the test aimed at nothing")
if failures:
    print(f"crash_test: {len(failures)} failure(s); the receive log's lines of the first files:")
    with open(rx_log, errors="replace") as f:
        log = f.readlines()
    for rel in (lost + unexplained)[:5]:
        print(f"--- {rel}")
        for line in log:
            if rel in line:
                print("  " + line.rstrip())
        print("  journal: " + ", ".join(f"{k} {i}" for k, _, i, p, _ in jrows if p == rel))
    # For a file no kill explains: the runs around its sending, when each came up and was
    # killed, the files each announced first and last, and what each said of loss or drops.
    for rel in unexplained[:3]:
        i = order[rel]
        print(f"--- runs around {rel} (sent {starts[i] - t_send_wall:.3f}-"
              f"{ends[i] - t_send_wall:.3f} s)")
        for r in runs:
            k = next((k for k in kills if k["run"] == r.index), None)
            if r.up_wall is None or r.up_wall > ends[i] + 2 or (k and k["wall"] < starts[i] - 2):
                continue
            names = [ANNOUNCE.match(m) for ri, _, m in log_lines if ri == r.index]
            names = [n["path"] for n in names if n]
            down = f", killed at {k['wall'] - t_send_wall:.3f} s" if k else ""
            print(f"  run {r.index}: up at {r.up_wall - t_send_wall:.3f} s{down}; announced "
                  f"{len(names)} file(s), first {names[0] if names else '-'}, last "
                  f"{names[-1] if names else '-'}")
            for ri, _, m in log_lines:
                if ri == r.index and re.search(r"lost on the link|dropped|damaged", m):
                    print("    " + m[:200])
if os.environ.get("DDFT_CRASH_KEEP"):
    subprocess.run(["cp", "-a", work, os.environ["DDFT_CRASH_KEEP"]])
    print(f"crash_test: work folder copied to {os.environ['DDFT_CRASH_KEEP']}")
if failures:
    sys.exit(1)
print("crash_test: passed")
PY
