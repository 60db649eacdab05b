"""Which processes reach a path: a ``memory://`` URL only the driver's.

fsspec's memory filesystem is a dict inside one process. Executors of the ``processes``
or ``ray`` backend each see an empty one of their own, so a read of it used to fail in a
task with the path and no reason (``cannot read input file 'memory:///sf/in.txt':
/sf/in.txt``), and a write was lost without a word: the part files went into the
executors' dicts and the driver's held only ``_SUCCESS``. Both are refused at the call,
on the driver, naming the backend.
"""

from __future__ import annotations

import os
import re
from typing import Any

from strataflow.common.checks import ConfigError
from strataflow.config.backends import backend_class
from strataflow.io.paths import split_paths

__all__ = ["check_reachable"]

#: a URL on fsspec's in-memory filesystem, alone or in a chain (``simplecache::memory://``)
_MEMORY_URL = re.compile(r"(?:^|::)memory://", re.I)


def check_reachable(path: Any, backend: str, op: str, writing: bool = False) -> None:
    """ConfigError when ``path`` (anything the readers or writers take: a path, a comma
    list, a list) names a ``memory://`` URL and ``backend``'s tasks do not run in the
    driver's process. A path refused for another reason is left to the reader or writer."""
    if backend_class(backend).in_driver_process:
        return
    try:
        paths = [os.fspath(path)] if writing else split_paths(path)
    except (TypeError, ConfigError):
        return
    for p in paths:
        if isinstance(p, str) and _MEMORY_URL.search(p):
            what = "writes there would be lost" if writing else "they cannot see it"
            raise ConfigError(
                f"{op}: {p!r} is on fsspec's memory:// filesystem, which lives inside one process, and the "
                f"{backend} backend runs tasks in executor processes of their own ({what}); use "
                f"backend='threads' (tasks in this process), or a file path or a filesystem every process "
                f"reaches (s3://, gs://, ...)")
