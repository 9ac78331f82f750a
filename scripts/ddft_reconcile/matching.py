"""Matching: each receiver's events to the manifest lines, then one outcome a line over all the
receivers."""

from .manifest import Entry
from .outcomes import (ALREADY, DELIVERED, FAILED, FILTERED, KEY_MISMATCH, NEVER_SEEN, NOT_SENT,
                       REFUSED, RESOLVED, SKIPPED, UNFINISHED)

# The failure reason the receiver gives the files of a session that a new session replaced. Its
# FAILED lines are written after the new session's first line (even after a later session's when
# the receiver is behind), so they are matched to the sessions before first.
RETIRED_REASON = "sender restarted (new session)"


class Reconciler:
    """One receiver's logs, read as one stream, against the manifest lines ENTRIES (that
    receiver's own copies). LOGGED_SESSIONS are the sessions that start in any receiver's logs:
    a line of another session is matched by its path alone."""

    def __init__(self, entries, logs, logged_sessions):
        self.entries = entries
        self.extra = []  # deliveries no manifest line names: dicts
        self.other_unmatched = {FAILED: 0, REFUSED: 0, FILTERED: 0}
        self.manifest_sessions = {e.session for e in entries}
        self.logged_sessions = logged_sessions
        # The manifest lines the wire may have carried, in manifest (send) order.
        self.by_session_path = {}
        self.by_session_id = {}
        self.by_path_alone = {}
        for e in entries:
            if e.status == "skipped" or (e.status == "failed" and e.file_id == 0):
                continue  # it never got a file id: nothing of it went out
            self.by_session_path.setdefault((e.session, e.path), []).append(e)
            self.by_session_id.setdefault((e.session, e.file_id), e)
            if e.session not in self.logged_sessions:
                self.by_path_alone.setdefault(e.path, []).append(e)
        self.logs = logs

    def take(self, path, sessions, size=None, announce=False, prefer_older=False):
        """The first manifest line still open that an event about PATH (of SIZE bytes, when the
        line says) stands for. SESSIONS are the sessions this receiver has seen since it started,
        the current one last. The current one is tried first, then the older ones, newest first:
        a file's last writes can end after the next session's first line. PREFER_OLDER, for the
        files of a replaced session, which fail after the next session starts (after later ones
        too when the receiver is behind, in the order the sessions were replaced): the older ones
        first, oldest first. An announce (ANNOUNCE) is only ever the current session's. Failing
        those, a line matched by its path alone, when the event is in no manifest session. Lines
        of SIZE are taken before others (the same path sent twice). Returns (entry, how) or
        (None, None)."""
        current = sessions[-1] if sessions else None
        if announce:
            order = sessions[-1:]
        elif prefer_older:
            order = sessions[:-1] + sessions[-1:]
        else:
            order = sessions[::-1]
        candidates = [(e, "session") for s in order
                      for e in self.by_session_path.get((s, path), [])]
        if current not in self.manifest_sessions:
            candidates += [(e, "path") for e in self.by_path_alone.get(path, [])]
        candidates = [(e, how) for e, how in candidates
                      if e.outcome is None and not (announce and e.announced)]
        for e, how in candidates:
            if size is None or e.size is None or e.size == size or e.status == "failed":
                return e, how
        return candidates[0] if candidates else (None, None)

    def run(self):
        """Reads the events of every log in order, and settles the manifest lines they name."""
        self.sessions = []  # since the receiver started, the current one last
        self.pending_notes = {}  # path -> notes logged before its File: line
        self.recovered = {}  # path -> its "delivered by an earlier run" event, before File:
        self.last_delivered = {}  # path -> Entry or extra dict, for the hook lines after File:
        handlers = {
            "session": self.on_session, "receiver start": self.on_receiver_start,
            "leftover": self.on_failed_by_id, "missed": self.on_failed_by_id,
            "recovered": self.on_recovered, "resolved": self.on_resolved, "copy": self.on_copy,
            "note": self.on_note, "repaired": self.on_repaired, "hook": self.on_hook,
            "announce": self.on_announce,
        }
        for log in self.logs:
            for ev in log.events:
                # The rest (delivered, failed, refused, filtered) settle the line they name.
                handlers.get(ev.kind, self.on_outcome)(ev)

    def on_session(self, ev):
        if ev.session in self.sessions:  # the same session again (the sender resumed)
            self.sessions.remove(ev.session)
        self.sessions.append(ev.session)

    def on_receiver_start(self, ev):
        # The receiver logs its start line once its threads run: the first lines of a session
        # already under way (its start line among them) can come before it. The session last
        # started goes on; those before it are over (a new run has none of their files in
        # flight).
        self.sessions = self.sessions[-1:]
        self.pending_notes.clear()
        self.recovered.clear()  # its File: line follows it at once, before this line

    def on_failed_by_id(self, ev):
        """A file named failed by its session and file id: at start-up, or by the sender's
        history."""
        e = self.by_id(ev.session, ev.file_id, ev.path)
        if e is None:
            self.other_unmatched[FAILED] += 1
        elif e.outcome is None:
            self.settle(e, FAILED, ev, "session", ev.detail)
        else:  # named a second time: the report must show it
            by = "at start-up" if ev.kind == "leftover" else "by the sender's history"
            e.notes.append(f"named failed again {by} ({ev.where}): {ev.detail}")

    def on_recovered(self, ev):
        self.recovered[ev.path] = ev

    def on_resolved(self, ev):
        e = self.by_id(ev.session, ev.file_id, ev.path)
        if e is not None and e.outcome not in (DELIVERED, KEY_MISMATCH):
            self.settle(e, RESOLVED, ev, "session",
                        f"{e.outcome or 'not named'}, then delivered on resend "
                        f"(session {ev.by_session}, file {ev.by_id})")

    def on_copy(self, ev):
        e = self.by_id(ev.by_session, ev.by_id, ev.path)
        if e is not None and e.outcome is None:
            self.settle(e, ALREADY, ev, "session",
                        f"a copy of the file delivered in session {ev.session} "
                        f"(file {ev.file_id}): not written")

    def on_note(self, ev):
        self.pending_notes.setdefault(ev.path, []).append(ev.text)

    def on_repaired(self, ev):
        self.repaired(self.last_delivered.get(ev.path), ev)

    def on_hook(self, ev):
        target = self.last_delivered.get(ev.path)
        note = f"on-complete: {ev.text}"
        if ev.level != "Info":
            note += f" ({ev.level})"
        if isinstance(target, Entry):
            target.notes.append(note)
        elif target is not None:
            target["notes"].append(note)

    def on_announce(self, ev):
        e, how = self.take(ev.path, self.sessions, ev.size, announce=True)
        if e is not None:
            e.announced = ev.where
            e.matched_by = how

    def on_outcome(self, ev):
        """A File: line, or a file failed, refused or filtered: the line it settles."""
        if ev.kind == "delivered" and ev.path in self.recovered:
            self.recovered_delivery(self.recovered.pop(ev.path), ev, self.last_delivered)
            return
        if ev.kind in ("refused", "filtered"):
            # Decided at the announce, in the session that sent it.
            e, how = self.take(ev.path, self.sessions[-1:])
        else:
            e, how = self.take(ev.path, self.sessions, ev.size,
                               prefer_older=(ev.kind == "failed" and
                                             ev.reason.startswith(RETIRED_REASON)))
        notes = self.pending_notes.pop(ev.path, [])
        if ev.kind == "delivered":
            self.delivered(e, how, ev, notes)
        elif e is None:
            self.other_unmatched[{"failed": FAILED, "refused": REFUSED,
                                  "filtered": FILTERED}[ev.kind]] += 1
        elif ev.kind == "failed":
            self.settle(e, FAILED, ev, how, ev.detail)
        elif ev.kind == "refused":
            self.settle(e, REFUSED, ev, how, ev.text)
        elif ev.kind == "filtered":
            self.settle(e, FILTERED, ev, how, ev.text)

    def delivered(self, e, how, ev, notes):
        """The File: line EV of the manifest line E (None: of a file no line names), with the
        NOTES logged before it."""
        if e is None:
            extra = {"session": self.sessions[-1] if self.sessions else None,
                     "path": ev.path, "key": ev.key, "verify": ev.verify,
                     "bytes": ev.size, "log": ev.where, "notes": notes}
            self.extra.append(extra)
            self.last_delivered[ev.path] = extra
            return
        e.notes.extend(notes)
        e.received_key = ev.key or "none"
        self.last_delivered[ev.path] = e
        if same_key(e.key, ev.key):
            self.settle(e, DELIVERED, ev, how, f"key {ev.key or 'none'}")
            if e.size is not None and e.size != ev.size:
                e.notes.append(f"size {ev.size:,} bytes in the receive log, "
                               f"{e.size:,} in the manifest")
        else:
            self.settle(e, KEY_MISMATCH, ev, how,
                        f"manifest key {e.key or 'none'}, receive log key "
                        f"{ev.key or 'none'}")

    @staticmethod
    def repaired(target, ev):
        """The "repaired:" line EV, which follows the File: line of the delivery TARGET (an
        Entry, or the dict of a delivery no manifest line names)."""
        if target is None:
            return
        if isinstance(target, Entry):
            target.notes.append(ev.text)
            target.fec_rebuilt, target.repeat_filled = ev.fec, ev.filled
        else:
            target["notes"].append(ev.text)
            target["fec_rebuilt"], target["repeat_filled"] = ev.fec, ev.filled

    def by_id(self, session, file_id, path):
        """The manifest line of (SESSION, FILE_ID), or, for a manifest without file ids, the
        first line of SESSION and PATH still open (else its last one); None when none is."""
        e = self.by_session_id.get((session, file_id))
        if e is not None and e.file_id == file_id:
            return e
        lines = self.by_session_path.get((session, path), []) if path is not None else []
        lines = [x for x in lines if x.file_id in (0, file_id)]
        return next((x for x in lines if x.outcome is None), lines[-1] if lines else None)

    def recovered_delivery(self, rv, ev, last_delivered):
        """The File: line EV that follows RV, a file an earlier run delivered and stopped before
        logging (or before recording that it had: then the file is logged Passed twice, which is
        no problem). Matched by the session and file id RV names."""
        e = self.by_id(rv.session, rv.file_id, ev.path)
        if e is None:
            extra = {"session": rv.session, "path": ev.path, "key": ev.key, "verify": ev.verify,
                     "bytes": ev.size, "log": ev.where, "notes": []}
            self.extra.append(extra)
            last_delivered[ev.path] = extra
            return
        last_delivered[ev.path] = e
        if e.outcome is None:
            e.received_key = ev.key or "none"
            e.notes.append("delivered by an earlier run of the receiver, synced at its "
                           f"restart ({rv.where})")
            if same_key(e.key, ev.key):
                self.settle(e, DELIVERED, ev, "session", f"key {ev.key or 'none'}")
            else:
                self.settle(e, KEY_MISMATCH, ev, "session",
                            f"manifest key {e.key or 'none'}, receive log key "
                            f"{ev.key or 'none'}")
        elif e.outcome in (DELIVERED, KEY_MISMATCH):
            e.notes.append(f"logged Passed again at the receiver's restart ({ev.where}): the run "
                           "that delivered it stopped before recording that it had")
        else:  # failed, and delivered too: the report must show both
            e.notes.append(f"the receive log also says it was delivered ({ev.where}, found at "
                           "the receiver's restart)")

    def settle(self, e, outcome, ev, how, detail):
        e.outcome = outcome
        e.detail = detail
        e.log = ev.where
        e.matched_by = how


def same_key(manifest_key, logged_key):
    if manifest_key is None or logged_key is None:
        return manifest_key is None and logged_key is None
    return manifest_key.lower() == logged_key.lower()


# How much one receiver's word on a manifest line counts against another's: a delivery wins over
# any failure elsewhere (the file is there), a failure over an announce with no outcome.
RANK = {DELIVERED: 0, RESOLVED: 0, ALREADY: 0, KEY_MISMATCH: 1, FAILED: 2, REFUSED: 3, FILTERED: 4,
        UNFINISHED: 5}


def said(view):
    """What one receiver's logs say of a manifest line: an outcome, UNFINISHED (announced, no
    outcome after it), or None (they do not name it)."""
    if view.outcome is not None:
        return view.outcome
    return UNFINISHED if view.announced else None


class Reconciliation:
    """Every manifest line against every receiver: each receiver's logs are matched on their own
    (their own sessions, their own time order), then each line takes the outcome of the receiver
    whose word counts most (RANK; the first given among equals), with a note for each other
    receiver that names it."""

    def __init__(self, entries, receivers):
        self.entries = entries
        self.receivers = receivers
        self.several = len(receivers) > 1
        self.manifest_sessions = {e.session for e in entries}
        self.logged_sessions = {ev.session for r in receivers for log in r.logs
                                for ev in log.events if ev.kind == "session"}
        self.extra = []  # deliveries no manifest line names, of every receiver
        self.other_unmatched = {FAILED: 0, REFUSED: 0, FILTERED: 0}

    def run(self):
        views = []  # per receiver, its copies of the manifest lines
        for r in self.receivers:
            rec = Reconciler([e.fresh() for e in self.entries], r.logs, self.logged_sessions)
            rec.run()
            for x in rec.extra:
                x["receiver"] = r
            self.extra += rec.extra
            for outcome, n in rec.other_unmatched.items():
                self.other_unmatched[outcome] += n
            views.append(rec.entries)
        for i, e in enumerate(self.entries):
            self.merge(e, [(r, lines[i]) for r, lines in zip(self.receivers, views)])
            self.conclude(e)

    def merge(self, e, views):
        named = [(r, v) for r, v in views if said(v) is not None]
        if not named:
            return
        chosen_receiver, chosen = min(named, key=lambda rv: RANK[said(rv[1])])
        for field in ("outcome", "detail", "received_key", "matched_by", "log", "announced",
                      "notes", "fec_rebuilt", "repeat_filled"):
            setattr(e, field, getattr(chosen, field))
        e.receiver = chosen_receiver
        for r, v in named:
            if v is chosen:
                continue
            if said(v) == UNFINISHED:
                e.notes.append(f"also announced on receiver {r.name} ({v.announced}), with no "
                               "outcome after it")
            else:
                e.notes.append(f"also {v.outcome} on receiver {r.name} ({v.log})"
                               + (f": {v.detail}" if v.detail else ""))

    def conclude(self, e):
        """The outcome of a line no receiver decided, or that the sender never sent."""
        if e.status == "skipped":
            e.outcome = SKIPPED
            e.detail = e.reason or "(no reason given)"
            e.receiver = None  # the sender's word
        elif e.status == "failed":
            if e.outcome is not None:
                on = f" of receiver {e.receiver.name}" if self.several else ""
                e.notes.append(f"the receive log{on} says: {e.outcome}"
                               + (f": {e.detail}" if e.detail else ""))
            e.outcome = NOT_SENT
            e.detail = e.reason or "(no reason given)"
            e.receiver = None  # the sender's word
        elif e.outcome is None:
            e.outcome = UNFINISHED if e.announced else NEVER_SEEN
            if e.announced:
                e.detail = "announced, no outcome after it in the logs given"
                e.log = e.announced
        if e.session not in self.logged_sessions and e.status == "sent":
            e.notes.append(f"session {e.session} does not start in the receive logs"
                           + (": matched by path alone" if e.matched_by == "path" else ""))
