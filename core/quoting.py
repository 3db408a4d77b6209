"""Input quoted in a message: short, and escaped where it is not printable, so that a hostile or broken file
never writes control bytes or pages of noise into a terminal or the status bar."""
from __future__ import annotations

QUOTED = 24  # bytes of input a message shows


def quoted(value: bytes | bytearray | memoryview | str, limit: int = QUOTED) -> str:
    """`value` as a quoted string of at most `limit` bytes: printable text as it is (a Japanese name stays
    readable), every other character and every byte that is not UTF-8 as an escape, then '…' when cut."""
    raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else bytes(value)
    text = raw[:limit].decode("utf-8", "backslashreplace")
    out = "".join("\\'" if c == "'" else c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                  for c in text)
    return f"'{out}'" + ("…" if len(raw) > limit else "")
