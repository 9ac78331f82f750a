"""The send manifest (dd_file_send --manifest): one Entry a line."""

import copy
import json
import re

from .inputs import BadInput, read_lines, to_text

KEY_RE = re.compile(r"0x[0-9A-Fa-f]{8}")
SESSION_RE = re.compile(r"[0-9a-f]{16}")


class Entry:
    """One manifest line and what the receive logs say became of it."""

    def __init__(self, where, obj):
        self.where = where  # "manifest:LINE"
        self.time = obj.get("time")
        self.session = obj["session"]
        self.file_id = obj.get("file_id", 0)
        self.path = obj["path"]
        self.size = obj.get("size")
        self.verify = obj.get("verify")
        self.key = obj.get("key")
        self.status = obj["status"]
        self.reason = obj.get("reason")
        self.forget()

    def forget(self):
        """What the receive logs say of it, not known yet."""
        self.outcome = None
        self.detail = ""
        self.received_key = None
        self.matched_by = None  # "session" or "path"
        self.log = None  # "LOG:LINE" of the line that decided the outcome
        self.announced = None  # "LOG:LINE" of its announce line
        self.notes = []
        self.receiver = None  # the Receiver whose logs decided the outcome
        # From the "repaired:" line after its File: line; None when the log has none.
        self.fec_rebuilt = None
        self.repeat_filled = None

    def fresh(self):
        """A copy of the manifest line for one receiver's logs to fill in."""
        view = copy.copy(self)
        view.forget()
        return view


def load_manifest(path):
    entries = []
    for number, raw, _ in read_lines(path):
        if not raw.strip():
            continue
        where = f"{path}:{number}"
        try:
            obj = json.loads(to_text(raw))
        except json.JSONDecodeError as e:
            raise BadInput(f"{where}: not valid JSON ({e.msg} at column {e.colno})") from None
        if not isinstance(obj, dict):
            raise BadInput(f"{where}: not a JSON object")
        for field, kind in (("session", str), ("path", str), ("status", str)):
            if not isinstance(obj.get(field), kind):
                raise BadInput(f"{where}: no \"{field}\" string")
        if not SESSION_RE.fullmatch(obj["session"]):
            raise BadInput(f"{where}: \"session\" is not 16 lower-case hex digits: "
                           f"{obj['session']!r}")
        if obj["status"] not in ("sent", "failed", "skipped"):
            raise BadInput(f"{where}: \"status\" is not \"sent\", \"failed\" or \"skipped\": "
                           f"{obj['status']!r}")
        key = obj.get("key")
        if key is not None and not (isinstance(key, str) and KEY_RE.fullmatch(key)):
            raise BadInput(f"{where}: \"key\" is neither null nor 0x and 8 hex digits: {key!r}")
        file_id = obj.get("file_id", 0)
        if not isinstance(file_id, int) or isinstance(file_id, bool) or file_id < 0:
            raise BadInput(f"{where}: \"file_id\" is not a whole number: {file_id!r}")
        size = obj.get("size")
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
            raise BadInput(f"{where}: \"size\" is not a whole number: {size!r}")
        entries.append(Entry(where, obj))
    return entries
