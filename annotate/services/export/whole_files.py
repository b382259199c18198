"""Export files that are whole or absent: each is written under a temporary name beside it and renamed into place
only when its last line is written, so an export stopped half-way (Ctrl-C, a database error, a full disk) leaves
no truncated file that looks like an export, and never truncates the previous export at that path."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


def temporary_beside(path: Path) -> tuple[int, Path]:
    """A new empty file beside ``path`` (same folder, so a rename is atomic), hidden by its name; its descriptor and
    path. It gets the mode a plain open would give (0666 less the umask), not mkstemp's 0600, so the export that
    replaces ``path`` is as readable to others as a file written in place."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    os.fchmod(descriptor, 0o666 & ~_umask())
    return descriptor, Path(temporary)


@contextmanager
def whole_file(path: Path, mode: str = "w", **open_options: Any) -> Iterator[IO[Any]]:
    """A handle to write ``path`` with; the file appears at ``path`` only if the block ends without an error."""
    descriptor, temporary = temporary_beside(path)
    try:
        with os.fdopen(descriptor, mode, **open_options) as handle:
            yield handle
        os.replace(temporary, path)
    except (Exception, KeyboardInterrupt):
        # An error or a Ctrl-C. A process killed outright removes nothing: its temporary file is found by what
        # restarts the work (an export job's folder is emptied before it is written again).
        temporary.unlink(missing_ok=True)
        raise
