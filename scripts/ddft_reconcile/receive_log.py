"""The receive logs (dd_file_receive --log-file, text or JSON): the lines that matter, as events,
and each receiver's logs in time order."""

import datetime
import json
import os
import re
import sys

from .inputs import PROG, BadInput, read_lines, to_text

TEXT_PREFIX_RE = re.compile(rb"(\d\d)/(\d\d)-(\d\d):(\d\d):(\d\d) ")
SESSION_START_RE = re.compile(r"Info: sender session ([0-9a-f]{16}) started")
RECEIVER_START_RE = re.compile(r"Info: receiving on ")
# receiver/assembly/assembler.cpp finish_rename(): Key: 0x%08X, B2B|SHA256 Passed, or Key: none, NONE ...
# The "... Failed" form (verification failed) is followed by the file's FAILED line.
FILE_RE = re.compile(r"File: (?P<path>.*), Trans: (?P<bytes>[\d,]+) \(bytes\), Time: \S+, "
                     r"Rate: \S+ \(MB/s\), Key: (?P<key>0x[0-9A-F]{8}|none), "
                     r"(?P<verify>\S+) (?P<result>Passed|Not verified|Failed)")
# close_failed(): "Error: PATH FAILED: REASON; received X of Y bytes[; missing bytes ...]
# [; partial data removed (disk full)]; record: RECORD". This matches what follows " FAILED: ".
FAILED_TAIL_RE = re.compile(r"(?P<reason>.*); received (?P<got>[\d,]+) of (?P<size>[\d,]+) "
                            r"bytes(?P<more>.*); record: (?P<record>.*)")
ANNOUNCE_RE = re.compile(r"Info: (?P<path>.*), Size: (?P<size>[\d,]+) \(bytes\) "
                         r"\. \. \. receiving(?: \(send pausing \d+ seconds\))?"
                         r"(?: \(joined mid-file: [^()]*\))?")
REPEAT_RE = re.compile(r"Info: (?P<path>.*): (?P<note>complete after copy \d+ of \d+ "
                       r"\(--repeat\))")
KEPT_RE = re.compile(r"Info: (?P<path>.*): (?P<note>the existing file of that name was kept "
                     r"as .*)")
# receiver/assembly/finisher.cpp deliver(), right after a file's File: line when anything repaired it.
REPAIRED_RE = re.compile(r"Info: (?P<path>.*): (?P<note>repaired: FEC rebuilt (?P<fec>\d+) "
                         r"packet\(s\), repeats filled (?P<filled>\d+) chunk\(s\))")
# receiver/delivery/recovery.cpp, at start-up, before the run's "receiving on" line (the sessions the
# log names last are an earlier run's, so these name their file by session and file id):
# - a temporary file whose origin names it: its reason ends in "found at start-up (session S,
#   file N)" (the rest of its FAILED line as close_failed()'s);
STARTUP_FAILED_RE = re.compile(r".*; found at start-up \(session (?P<session>[0-9a-f]{16}), "
                               r"file (?P<id>\d+)\)")
# receiver/assembly/sender_history.cpp: a file the sender's history names that the receiver never got
# while it was not receiving; it names its session and file id, which need not be one the log
# starts.
MISSED_RE = re.compile(r"sent at \S+ in session (?P<session>[0-9a-f]{16}), file (?P<id>\d+), "
                       r"while this receiver was not receiving \(named by the sender's history\)")
# - a file an earlier run renamed into place and stopped before logging: this line, then its
#   "File: ... Passed" line (a second one when the run stopped between its File: line and its
#   journal's "P" line);
RECOVERED_RE = re.compile(r"Info: (?P<path>.*): delivered by an earlier run of the receiver "
                          r"\(session (?P<session>[0-9a-f]{16}), file (?P<id>\d+)\), which "
                          r"stopped before logging it; synced now")
# - a temporary file without origin (from before origins, or damaged): only its name,
#   ".ddft-<session>-<id>.part", says which file it was.
LEFTOVER_RE = re.compile(r"Warn: (?P<dir>.*?)\.ddft-(?P<session>[0-9a-f]{16})-(?P<id>\d+)\.part: "
                         r"left incomplete by an earlier run of the receiver; moved to the "
                         r"failed folder \(record: (?P<record>.*)\)")
# receiver/assembly/sender_history.cpp, after a path JSON-quoted: a resend that delivered a file that
# had failed (or been missed), and one of a file delivered already, skipped.
RESOLVED_RE = re.compile(r": delivered on resend \(session (?P<by_session>[0-9a-f]{16}), file "
                         r"(?P<by_id>\d+)\) at \S+: the failure of session "
                         r"(?P<session>[0-9a-f]{16}), file (?P<id>\d+) is resolved(; record: .*)?")
COPY_RE = re.compile(r": a copy of the file delivered in session (?P<session>[0-9a-f]{16}) \(file "
                     r"(?P<id>\d+)\); not written \(resent as file (?P<by_id>\d+) of session "
                     r"(?P<by_session>[0-9a-f]{16})\)")
# Lines whose path is JSON-quoted: refused, filtered, on-complete.
QUOTED_PREFIXES = (
    ("refused", "Error: refused file "),
    ("filtered", "Info: filtered "),
    ("hook", "Info: on-complete "),
    ("hook", "Warn: on-complete "),
    ("hook", "Error: on-complete "),
)
_decoder = json.JSONDecoder()


def quoted_path(msg, start):
    """The JSON string at msg[start:] and the text after it, or (None, None)."""
    if start >= len(msg) or msg[start] != '"':
        return None, None
    try:
        path, end = _decoder.raw_decode(msg, start)
    except json.JSONDecodeError:
        return None, None
    return (path, msg[end:]) if isinstance(path, str) else (None, None)


class Event:
    def __init__(self, kind, where, **fields):
        self.kind = kind
        self.where = where
        self.__dict__.update(fields)


def parse_message(msg, where, known_paths):
    """The event a receive-log message stands for, or None for the lines that do not matter."""
    if msg.startswith("File: "):
        m = FILE_RE.fullmatch(msg)
        if m and m["result"] != "Failed":
            key = None if m["key"] == "none" else m["key"]
            return Event("delivered", where, path=m["path"], key=key, verify=m["verify"],
                         size=int(m["bytes"].replace(",", "")))
        return None
    for kind, prefix in QUOTED_PREFIXES:
        if msg.startswith(prefix):
            path, rest = quoted_path(msg, len(prefix))
            if path is not None and rest.startswith(": "):
                return Event(kind, where, path=path, text=rest[2:], level=msg.split(":", 1)[0])
            # else an unquoted name that merely starts like it: an announce line, say
    if msg.startswith('Info: "'):
        event = parse_resend(msg, where)
        if event is not None:
            return event
    if msg.startswith("Error: ") and " FAILED: " in msg:
        return parse_failed(msg, where, known_paths)
    m = SESSION_START_RE.fullmatch(msg)
    if m:
        return Event("session", where, session=m[1])
    if RECEIVER_START_RE.match(msg):
        return Event("receiver start", where)
    m = LEFTOVER_RE.fullmatch(msg)
    if m:
        return Event("leftover", where, session=m["session"], file_id=int(m["id"]),
                     record=m["record"], path=None,
                     detail="left incomplete by an earlier run of the receiver (found at "
                            f"start-up); record: {m['record']}")
    m = RECOVERED_RE.fullmatch(msg)
    if m:
        return Event("recovered", where, path=m["path"], session=m["session"],
                     file_id=int(m["id"]))
    for pattern in (REPEAT_RE, KEPT_RE):
        m = pattern.fullmatch(msg)
        if m:
            return Event("note", where, path=m["path"], text=m["note"])
    m = REPAIRED_RE.fullmatch(msg)
    if m:
        return Event("repaired", where, path=m["path"], text=m["note"], fec=int(m["fec"]),
                     filled=int(m["filled"]))
    m = ANNOUNCE_RE.fullmatch(msg)
    if m:
        return Event("announce", where, path=m["path"], size=int(m["size"].replace(",", "")))
    return None


def parse_resend(msg, where):
    """The "resolved" or "copy" event of an 'Info: "PATH": ...' message about a resend, or None."""
    path, rest = quoted_path(msg, len("Info: "))
    for kind, pattern in (("resolved", RESOLVED_RE), ("copy", COPY_RE)):
        m = pattern.fullmatch(rest or "") if path is not None else None
        if m:
            return Event(kind, where, path=path, session=m["session"], file_id=int(m["id"]),
                         by_session=m["by_session"], by_id=int(m["by_id"]))
    return None


def parse_failed(msg, where, known_paths):
    """The event of an "Error: PATH FAILED: ..." message: "failed", or "leftover" (found at
    start-up) or "missed" (named by the sender's history); None when the rest of the line is not
    a failure's."""
    # The path is not quoted: when it holds " FAILED: " itself, the cut that leaves a path the
    # manifest names wins, else the first one after which the rest of the line fits.
    rest = msg[len("Error: "):]
    chosen = None
    cut = rest.find(" FAILED: ")
    while cut != -1:
        tail = rest[cut + len(" FAILED: "):]
        m = FAILED_TAIL_RE.fullmatch(tail)
        if m:
            if chosen is None or rest[:cut] in known_paths:
                chosen = (rest[:cut], tail, m)
            if rest[:cut] in known_paths:
                break
        cut = rest.find(" FAILED: ", cut + 1)
    if chosen is None:
        return None
    path, tail, m = chosen
    found = STARTUP_FAILED_RE.fullmatch(m["reason"])
    if found:
        return Event("leftover", where, session=found["session"], file_id=int(found["id"]),
                     record=m["record"], path=path, detail=tail)
    found = MISSED_RE.fullmatch(m["reason"])
    if found:
        return Event("missed", where, session=found["session"], file_id=int(found["id"]),
                     record=m["record"], path=path, detail=tail)
    return Event("failed", where, path=path, reason=m["reason"], detail=tail,
                 size=int(m["size"].replace(",", "")))


class Log:
    """One receive log: its events in line order, and the time of its first line."""

    def __init__(self, path):
        self.path = path
        self.events = []
        self.first = None  # datetime, aware
        self.format = None

    def rotation(self):
        """N for NAME.N or NAME.N.gz (logrotate's older copies): a higher N is older."""
        m = re.search(r"\.(\d+)(\.gz)?$", self.path)
        return int(m[1]) if m else 0


def load_log(path, log_format, known_paths):
    log = Log(path)
    text_first = text_last = None
    for number, raw, ended in read_lines(path):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        fmt = log_format
        if fmt == "auto":
            fmt = log.format or ("json" if raw.lstrip().startswith(b"{") else "text")
        log.format = log.format or fmt
        if fmt == "json":
            try:
                obj = json.loads(to_text(raw))
                if not isinstance(obj, dict) or not isinstance(obj.get("msg"), str):
                    raise ValueError("no \"msg\" string")
            except ValueError as e:
                if not ended:
                    # A last line still being written: what it will say is not known yet.
                    print(f"{PROG}: note: {where}: incomplete last line skipped", file=sys.stderr)
                    continue
                reason = e.msg if isinstance(e, json.JSONDecodeError) else str(e)
                raise BadInput(f"{where}: not a JSON log line ({reason})") from None
            msg = obj["msg"]
            if log.first is None and isinstance(obj.get("time"), str):
                try:
                    t = datetime.datetime.fromisoformat(obj["time"])
                    log.first = t if t.tzinfo else t.astimezone()
                except ValueError:
                    pass
        else:
            m = TEXT_PREFIX_RE.match(raw)
            if not m:
                continue  # not a line of the receiver's
            stamp = tuple(int(x) for x in m.groups())
            if text_first is None:
                text_first = stamp
            text_last = stamp
            msg = to_text(raw[m.end():])
        event = parse_message(msg, where, known_paths)
        if event is not None:
            log.events.append(event)
    if log.first is None and text_first is not None:
        log.first = text_start_time(path, text_first, text_last)
    return log


def text_start_time(path, first, last):
    """The text format has no year: the last line is taken to be from the year of the file's
    modification time (the year before when its date is later than that), and the first line from
    that year or, when its date is later than the last line's, the year before."""
    try:
        mtime = datetime.datetime.fromtimestamp(os.stat(path).st_mtime)
    except OSError:
        mtime = datetime.datetime.now()
    year = mtime.year
    if last[:2] > (mtime.month, mtime.day):
        year -= 1
    if first > last:
        year -= 1
    month, day, hour, minute, second = first
    try:
        t = datetime.datetime(year, month, day, hour, minute, second)
    except ValueError:  # 02/29 in a year that is not a leap year: the guess was wrong anyway
        t = datetime.datetime(year, month, min(day, 28), hour, minute, second)
    return t.astimezone()


class Receiver:
    """One receiver: its log and the log's rotated copies, read as one stream in time order.
    Named by its first log's path, as given."""

    def __init__(self, paths):
        self.paths = paths
        self.name = paths[0]
        self.logs = []

    def load(self, log_format, known_paths):
        self.logs = [load_log(p, log_format, known_paths) for p in self.paths]
        # Oldest first; logs of equal start time by logrotate's number (NAME.2 before NAME.1).
        oldest = datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
        self.logs.sort(key=lambda log: (log.first or oldest, -log.rotation()))
