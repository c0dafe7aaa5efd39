"""An upload's bytes turned into text (`decode`): its size, emptiness and encoding checked, every
problem named as `core.tabular`'s readers name theirs; and how a size or a count is written in a
message (`size_over_limit`, `grouped`). `core.tabular.open_text` is the streaming counterpart.
"""

from __future__ import annotations

from core.problems import Collector


def size_over_limit(size: int, *, limit: int) -> str:
    """Describe a file over the size limit, in exact bytes, so the two never read equal.

    Rounded units would: a file one byte over a 10 MiB limit was "10.5 MB; the limit is 10.5 MB".

    >>> size_over_limit(10_485_761, limit=10_485_760)
    'the file is 10\u202f485\u202f761 bytes; the limit is 10\u202f485\u202f760 bytes (10.0 MiB)'
    """
    binary = _binary_size(limit)
    return (f"the file is {_bytes(size)} bytes; the limit is {_bytes(limit)} bytes"
            + (f" ({binary})" if binary else ""))


def grouped(n: int) -> str:
    """A whole number with its thousands apart by a narrow no-break space (SI style): readable,
    and never wrapped. ``grouped(1000000)`` is ``'1\u202f000\u202f000'``."""
    return f"{n:,}".replace(",", "\u202f")


_bytes = grouped


def _binary_size(n: int) -> str:
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= factor:
            return f"{n / factor:.1f} {unit}"
    return ""


def decode(data: bytes, errors: Collector, *, max_bytes: int) -> str | None:
    """Return the text of an upload, or None with the problem recorded (size, emptiness, encoding)."""
    if len(data) > max_bytes:
        errors.add(size_over_limit(len(data), limit=max_bytes))
        return None
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        errors.add("the file is UTF-16; save it as UTF-8 (CSV UTF-8 in spreadsheet programs)")
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        guess = "Windows-1252 or Latin-1" if _decodes(data, "cp1252") else "not UTF-8"
        errors.add(
            f"byte 0x{data[exc.start]:02X} is not UTF-8 (the file looks {guess}); "
            "save it as UTF-8",
            line=line, column=column,
        )
        return None
    if not text.strip():
        errors.add("the file is empty")
        return None
    return text


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True
