"""The report: a table and a summary, or JSON Lines."""

import json

from .outcomes import FINE, NOT_IN_MANIFEST, OUTCOMES

def shown_path(path):
    """The path as it is, unless it holds characters a terminal would not show: then JSON."""
    if path.isprintable() and path == path.strip():
        return path
    return json.dumps(path)


def report_text(rec, entries, only_problems, out, manifests):
    """The table, then the summary. With several receivers a RECEIVER column names the one whose
    logs decided each row ("-": none did, or the sender's word)."""
    def row(outcome, session, path, receiver, detail):
        if rec.several:
            return (outcome, session, shown_path(path), receiver.name if receiver else "-", detail)
        return (outcome, session, shown_path(path), detail)

    rows = []
    for e in entries:
        if only_problems and e.outcome in FINE:
            continue
        detail = "; ".join([e.detail] + e.notes if e.detail else e.notes)
        rows.append(row(e.outcome, e.session, e.path, e.receiver, detail))
    for x in rec.extra:
        detail = f"key {x['key'] or 'none'}" + "".join(f"; {n}" for n in x["notes"])
        rows.append(row(NOT_IN_MANIFEST, x["session"] or "?", x["path"], x["receiver"], detail))
    header = ("OUTCOME", "SESSION", "PATH") + (("RECEIVER",) if rec.several else ()) + ("DETAIL",)
    columns = len(header) - 1  # aligned; the detail runs on
    widths = [max([len(header[i])] + [len(r[i]) for r in rows]) for i in range(columns)]
    # A long path (or receiver) pushes its own row's detail, not everyone's.
    widths[2:] = [min(w, 48) for w in widths[2:]]
    for r in [header] + rows:
        line = "  ".join(r[i].ljust(widths[i]) for i in range(columns)) + "  " + r[-1]
        out.write(line.rstrip() + "\n")
    counts = summary_counts(rec)
    if len(manifests) == 1 and not rec.several:
        out.write(f"\nSummary: {len(entries)} file(s) in the manifest\n")
    else:
        out.write(f"\nSummary: {len(entries)} file(s) in {len(manifests)} manifest(s), "
                  f"{len(rec.receivers)} receiver(s): "
                  + ", ".join(r.name for r in rec.receivers) + "\n")
    width = max(len(k) for k in counts)
    for outcome, n in counts.items():
        out.write(f"  {outcome.ljust(width)}  {n:>6}\n")
    others = {k: v for k, v in rec.other_unmatched.items() if v}
    if others:
        out.write("  (the receive logs also hold "
                  + ", ".join(f"{n} {k}" for k, n in others.items())
                  + " file(s) no manifest line names)\n")
    missing = sorted({e.session for e in entries if e.session not in rec.logged_sessions})
    if missing:
        out.write(f"  session(s) that do not start in the receive logs: {', '.join(missing)}\n")


def summary_counts(rec):
    counts = {o: 0 for o in OUTCOMES}
    for e in rec.entries:
        counts[e.outcome] += 1
    counts[NOT_IN_MANIFEST] = len(rec.extra)
    return counts


def report_json(rec, entries, only_problems, out, status):
    def dump(obj):
        out.write(json.dumps(obj, ensure_ascii=False) + "\n")

    def with_receiver(obj, receiver):
        """With several receivers, "receiver" (after "outcome") names the one that decided."""
        if not rec.several:
            return obj
        return {"outcome": obj.pop("outcome"), "receiver": receiver.name if receiver else None,
                **obj}

    for e in entries:
        if only_problems and e.outcome in FINE:
            continue
        dump(with_receiver(
            {"outcome": e.outcome, "session": e.session, "file_id": e.file_id, "path": e.path,
             "size": e.size, "verify": e.verify, "key": e.key, "received_key": e.received_key,
             "detail": e.detail, "matched_by": e.matched_by, "notes": e.notes, "log": e.log,
             "manifest": e.where, "fec_rebuilt": e.fec_rebuilt,
             "repeat_filled": e.repeat_filled}, e.receiver))
    for x in rec.extra:
        dump(with_receiver(
            {"outcome": NOT_IN_MANIFEST, "session": x["session"], "file_id": None,
             "path": x["path"], "size": x["bytes"], "verify": x["verify"], "key": None,
             "received_key": x["key"] or "none", "detail": "", "matched_by": None,
             "notes": x["notes"], "log": x["log"], "manifest": None,
             "fec_rebuilt": x.get("fec_rebuilt"), "repeat_filled": x.get("repeat_filled")},
            x["receiver"]))
    summary = {"summary": summary_counts(rec), "files": len(entries),
               "sessions_not_in_logs": sorted({e.session for e in entries
                                               if e.session not in rec.logged_sessions}),
               "unmatched_in_logs": rec.other_unmatched, "exit": status}
    if rec.several:
        summary["receivers"] = [r.name for r in rec.receivers]
    dump(summary)
