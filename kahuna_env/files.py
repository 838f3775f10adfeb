"""What kind of thing a path names, told without opening it: the one check before any user-named file is read.

Opening a FIFO blocks until something writes into it and a device may never
end, so every reader of a file a user hands over (an agent file, a config,
a record, a report, a results store) asks :func:`file_type` first and
refuses anything but a regular file by its type, unopened.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Literal

FileType = Literal["file", "directory", "special"]
"""A regular file, a directory, or something else (a FIFO, a device, a socket)."""


def file_type(path: str | Path) -> FileType | None:
    """The kind of thing ``path`` names (links followed), or ``None`` when it cannot be told (missing, a link
    loop, a name the system refuses: the open that follows says which)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISREG(mode):
        return "file"
    return "directory" if stat.S_ISDIR(mode) else "special"
