"""Write a file whole or not at all: the one atomic write of the exports' command and jobs.

No Django here. The bytes go to a temporary file in the target's folder (the same file system,
so the final rename is atomic), are synced to disk, then renamed over the target: a reader, a
download or a crash sees the old file or the new one, never half of one.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path


def partial_name(target: Path) -> str:
    """Return the glob matching the temporary files `atomic_write` makes for ``target``."""
    return f".{target.name}.*.part"


def atomic_write(path: str | os.PathLike[str], chunks: Iterable[bytes]) -> int:
    """Write ``chunks`` to ``path`` atomically and return the number of bytes written.

    The temporary file is ``.<name>.<random>.part`` beside ``path`` (see `partial_name`); it is
    removed when writing fails, including when iterating ``chunks`` raises, and ``path`` is then
    left as it was. The file is readable by everyone and writable by its owner (0o644, less the
    umask), not private to the owner as a temporary file is made.

    >>> import tempfile, pathlib
    >>> target = pathlib.Path(tempfile.mkdtemp()) / "out.csv"
    >>> atomic_write(target, [b"a,b\\r\\n", b"1,2\\r\\n"]), target.read_bytes()
    (10, b'a,b\\r\\n1,2\\r\\n')
    """
    target = Path(path)
    handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.",
                                       suffix=".part")
    size = 0
    try:
        with os.fdopen(handle, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
                size += len(chunk)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(partial, 0o644 & ~_umask())
        os.replace(partial, target)
    except BaseException:
        Path(partial).unlink(missing_ok=True)
        raise
    return size


def _umask() -> int:
    # The umask can only be read by setting it; set it straight back.
    mask = os.umask(0)
    os.umask(mask)
    return mask
