"""dd_reconcile: what became of every file a send manifest names, from the receive log(s).

  dd_reconcile [options] SEND_MANIFEST RECEIVE_LOG [RECEIVE_LOG...]
  dd_reconcile [options] --manifest FILE [--manifest FILE...]
                         --receiver LOG[,LOG...] [--receiver LOG[,LOG...]...] [RECEIVE_LOG...]

SEND_MANIFEST is what `dd_file_send --manifest FILE` wrote (JSON Lines, one object per file).
RECEIVE_LOG is dd_file_receive's log (--log-file), in the DFTS text format or --log-format json;
give rotated logs too (receive.log.1, receive.log.2.gz, ...), in any order: they are put in time
order, and gzip-compressed ones are read as they are. The manifest may be gzip-compressed too.

Several senders and several receivers (lanes ending on several receiver hosts; N host pairs
sending one hot folder with dd_file_send --shard K/N): give each manifest with --manifest, and
each receiver's logs (a log and its rotated copies) with one --receiver, comma-separated. With
--manifest, the positional RECEIVE_LOGs, if any, are one more receiver; without it, the first
positional argument is the manifest, as in the first form. Each receiver's logs are read as a
stream of their own: its own sessions, time order within them only. A manifest line takes the
outcome of the receiver whose word counts most: delivered (or key mismatch) on any receiver,
else failed, refused, filtered or unfinished on one (the first given among equals), else never
seen; what the other receivers said of it follows as a note ("also failed on receiver ...").
With several receivers the report has a RECEIVER column (--json: "receiver"), naming each
receiver by its first log's path as given; "-" (null) when none decided ("never seen", "not
sent"). "not in manifest" covers the deliveries of every receiver.

Each manifest line gets one outcome:
  delivered       verified and in place, with the key the manifest holds (or both unverified)
  key mismatch    delivered, but the receive log's Key: differs from the manifest's
  failed          the receiver moved it to its failed folder; its reason and record follow
  delivered on resend
                  failed (or missed), then delivered by a resend (dd_file_send --resend-after
                  or --resend-request), which resolved its record: not counted against the
                  exit status
  already delivered
                  a resend of a file the receiver had delivered: recognised and not written;
                  not counted against the exit status
  refused         the receiver refused its announce; the reason follows
  filtered        the receiver's --include/--exclude dropped it; the reason follows
  unfinished      announced in the receive log, with no outcome after it in the logs given
  never seen      no line of the receive logs names it
  not sent        the sender could not send it (status "failed" in the manifest); its reason
  skipped         the sender left it out on purpose (status "skipped" in the manifest: a
                  symbolic link under dd_file_send --symlinks skip); its line follows. Not
                  counted against the exit status, and left out by --problems
After them come the files the receive logs show delivered that no manifest line names
("not in manifest"), then a count per outcome. A delivered file's "repaired: FEC rebuilt N
packet(s), repeats filled M chunk(s)" line (logged after its File: line when FEC or a later copy
filled anything in) becomes a note, and with --json its fec_rebuilt and repeat_filled (null when
the log has no such line: nothing was repaired, or the receiver predates the line). The send
manifest cannot hold these counts: nothing comes back across a diode.

Matching: a file is matched by (session, path). The receive log says which sender session the
lines after "Info: sender session X started" belong to (and keeps it across rotated files). A
path sent several times is matched once per send, in order. When a manifest line's session never
starts in the logs given (an older log not given), it is matched by its path alone, and the
report says so. What a restarted receiver logs at start-up about its earlier runs' files is
matched by the session and file id it names: a file left half-written (its FAILED line "...
found at start-up (session S, file N); ...", or, without origin, its temporary name
.ddft-S-N.part), and a file delivered whose run stopped before logging it ("delivered by an
earlier run of the receiver (session S, file N) ...", then its File: line). A file logged Passed
twice that way (its run stopped between its File: line and recording that it had) counts once,
with a note; a file named failed again, or failed and delivered, gets a note saying so.

Exit status: 0 when every manifest line was delivered with a matching key (or skipped); 1
otherwise (files not sent by the sender count); 2 on bad input (a file missing or unreadable, a manifest line that is
not valid JSON or lacks a field, a JSON log line that is not valid JSON, a file given twice or
for two receivers, an empty name in --receiver), with one line naming the file and line, and no
report.
"""

import argparse
import os
import sys

from .inputs import PROG, BadInput
from .manifest import load_manifest
from .matching import Reconciliation
from .outcomes import FINE
from .receive_log import Receiver
from .report import report_json, report_text

# The second form on one "or:" line, which help2man reads as the synopsis's second line.
USAGE = """%(prog)s [options] SEND_MANIFEST RECEIVE_LOG [RECEIVE_LOG...]
  or:  %(prog)s [options] --manifest FILE... --receiver LOG[,LOG...]... [RECEIVE_LOG...]"""


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Starts the usage with "Usage:", as the other ddft programs do (help2man reads the lines
    after it as the man page's synopsis)."""

    def add_usage(self, usage, actions, groups, prefix=None):
        super().add_usage(usage, actions, groups, "Usage: " if prefix is None else prefix)


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog=PROG, formatter_class=_HelpFormatter, usage=USAGE,
        description=__doc__[__doc__.index("SEND_MANIFEST is"):])
    p.add_argument("inputs", metavar="SEND_MANIFEST RECEIVE_LOG", nargs="*",
                   help="without --manifest: the manifest dd_file_send --manifest wrote (JSON "
                        "Lines, .gz too), then dd_file_receive's log and its rotated copies in "
                        "any order (.gz too); with --manifest: one receiver's logs")
    p.add_argument("--manifest", metavar="FILE", action="append", default=[], dest="manifests",
                   help="a send manifest; repeat it for several senders (--shard host pairs)")
    p.add_argument("--receiver", metavar="LOG[,LOG...]", action="append", default=[],
                   dest="receivers",
                   help="one receiver's log and its rotated copies, comma-separated; repeat it "
                        "for each receiver (lanes ending on several hosts, --shard host pairs)")
    p.add_argument("--json", action="store_true",
                   help="print JSON Lines instead: one object per file (outcome, [receiver,] "
                        "session, file_id, path, size, verify, key, received_key, detail, "
                        "matched_by, notes, log, manifest, fec_rebuilt, repeat_filled), then "
                        "one {\"summary\": ...} object")
    p.add_argument("--log-format", choices=("auto", "text", "json"), default="auto",
                   help="format of the receive logs: text (DFTS, the default of dd_file_receive), "
                        "json (--log-format json), or auto: each log's first line decides "
                        "(default: auto)")
    p.add_argument("--problems", action="store_true",
                   help="list only the files not delivered with a matching key (nor skipped "
                        "by the sender), and the files not in the manifest (the summary still "
                        "counts all)")
    p.add_argument("--only-manifest-sessions", action="store_true",
                   help="list as \"not in manifest\" only the deliveries of sessions the manifest "
                        "names (leave out other senders' and other runs' files)")
    args = p.parse_args(argv)
    positional = list(args.inputs)
    if not args.manifests:
        if not positional:
            p.error("the following arguments are required: SEND_MANIFEST (or --manifest FILE)")
        args.manifests = [positional.pop(0)]
    # Each receiver as (how it was given, its logs): the positional logs are one receiver.
    args.groups = [("RECEIVE_LOG", positional)] if positional else []
    for spec in args.receivers:
        args.groups.append((f"--receiver '{spec}'", spec.split(",")))
    if not args.groups:
        p.error("the following arguments are required: RECEIVE_LOG (or --receiver LOG[,LOG...])")
    return args


def check_inputs(args):
    """Each manifest and each log once: a log belongs to one receiver. Raises BadInput."""
    for given, paths in args.groups:
        if any(not path for path in paths):
            raise BadInput(f"{given}: an empty log name")
    seen = set()
    for paths in (args.manifests, [path for _, group in args.groups for path in group]):
        for path in paths:
            real = os.path.realpath(path)
            if real in seen:
                raise BadInput(f"'{path}' is given twice: each file is read once, and a log is "
                               "one receiver's")
            seen.add(real)


def main(argv):
    args = parse_args(argv)
    try:
        check_inputs(args)
        entries = []
        for manifest in args.manifests:
            entries += load_manifest(manifest)
        known = {e.path for e in entries}
        receivers = [Receiver(paths) for _, paths in args.groups]
        for r in receivers:
            r.load(args.log_format, known)
    except BadInput as e:
        print(f"{PROG}: {e}", file=sys.stderr)
        return 2
    rec = Reconciliation(entries, receivers)
    rec.run()
    if args.only_manifest_sessions:
        rec.extra = [x for x in rec.extra if x["session"] in rec.manifest_sessions]
    status = 0 if all(e.outcome in FINE for e in entries) else 1
    sys.stdout.reconfigure(errors="backslashreplace")
    if args.json:
        report_json(rec, entries, args.problems, sys.stdout, status)
    else:
        report_text(rec, entries, args.problems, sys.stdout, args.manifests)
    return status


def run(argv):
    """main(ARGV)'s exit status; 1 when the reader of the report goes away (| head), quietly."""
    try:
        return main(argv)
    except BrokenPipeError:  # | head: the rest of the report is not wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
