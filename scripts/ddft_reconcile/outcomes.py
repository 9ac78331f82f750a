"""The outcomes dd_reconcile gives a manifest line, in the order the summary lists them."""

DELIVERED = "delivered"
RESOLVED = "delivered on resend"
ALREADY = "already delivered"
KEY_MISMATCH = "key mismatch"
FAILED = "failed"
REFUSED = "refused"
FILTERED = "filtered"
UNFINISHED = "unfinished"
NEVER_SEEN = "never seen"
NOT_SENT = "not sent"
SKIPPED = "skipped"
NOT_IN_MANIFEST = "not in manifest"
OUTCOMES = [DELIVERED, RESOLVED, ALREADY, KEY_MISMATCH, FAILED, REFUSED, FILTERED, UNFINISHED,
            NEVER_SEEN, NOT_SENT, SKIPPED]
# Outcomes that are no problem: the exit status and --problems leave them out.
FINE = (DELIVERED, RESOLVED, ALREADY, SKIPPED)
