"""Reading input files with a size cap and writing output files atomically."""
from __future__ import annotations

import os
import tempfile

from .errors import FormatError

MAX_INPUT_BYTES = 2 << 30  # a model file above 2 GiB is refused before it is read


def read_bytes(path: str | os.PathLike, limit: int = MAX_INPUT_BYTES) -> bytes:
    size = os.path.getsize(path)
    if size > limit:
        raise FormatError(f"file is {size} bytes, above the {limit}-byte limit", 0, "file size")
    with open(path, "rb") as f:
        return f.read()


def write_atomic(path: str | os.PathLike, data: bytes) -> None:
    """Write to a temporary file beside `path` and rename it into place; no partial file is ever left."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".skinbridge-", suffix=".part", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
