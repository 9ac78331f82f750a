"""Reading dd_reconcile's inputs: files plain or gzip-compressed, line by line, as bytes, and
bytes to text the way the programs write names."""

import codecs
import gzip
import zlib

PROG = "dd_reconcile"


class BadInput(Exception):
    """One line for the operator: which file (and line) and what is wrong with it."""


# --- Bytes to text, the way the programs' json_quote() does it: valid UTF-8 stays as it is, any
#     other byte becomes the character of that number (0xE9: U+00E9). A raw name in the text
#     log then compares equal to the same name read from the manifest's (or the JSON log's)
#     \u00XX escapes.
def _byte_as_char(err):
    return chr(err.object[err.start]), err.start + 1


codecs.register_error("ddft-bytes", _byte_as_char)


def to_text(raw):
    return raw.decode("utf-8", "ddft-bytes")


def open_input(path):
    """Opens PATH for reading bytes, through gzip when it starts with gzip's magic number."""
    try:
        f = open(path, "rb")
        magic = f.read(2)
        f.seek(0)
    except OSError as e:
        raise BadInput(f"cannot read '{path}': {e.strerror}") from None
    if magic == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rb")
    return f


def read_lines(path):
    """Yields (line number, line as bytes without its newline, ended by a newline)."""
    f = open_input(path)
    try:
        with f:
            number = 0
            for raw in f:
                number += 1
                ended = raw.endswith(b"\n")
                yield number, raw.rstrip(b"\r\n"), ended
    except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as e:
        raise BadInput(f"cannot read '{path}': {getattr(e, 'strerror', None) or e}") from None
