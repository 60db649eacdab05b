"""When a store dataset was last opened and how often: one line appended per open to
``leases/.<id>.opened`` (its mtime the last open). The tiers' policy (``tiers.py``) and the
input cache's eviction (``inputs.py``, where an open is a hit) both read it."""

from __future__ import annotations

import os

__all__ = ["touch_access", "opens", "last_access_of"]


def _opened(root: str, dataset_id: str) -> str:
    return os.path.join(root, "leases", f".{dataset_id}.opened")


def touch_access(root: str, dataset_id: str, app: str = "") -> None:
    """Records that ``dataset_id`` was opened now, by application ``app`` (the recency and
    the count of opens the policy uses): one line appended (``O_APPEND``: whole lines)."""
    fd = os.open(_opened(root, dataset_id), os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{app or '-'}\n".encode())
    finally:
        os.close(fd)


def opens(root: str, dataset_id: str) -> int:
    """How many times the dataset was opened (by any application)."""
    try:
        with open(_opened(root, dataset_id), "rb") as fh:
            return fh.read().count(b"\n")
    except FileNotFoundError:
        return 0


def last_access_of(root: str, dataset_id: str, created: float) -> float:
    """When ``dataset_id`` was last opened (read, for a cached input), else ``created``."""
    try:
        return os.stat(_opened(root, dataset_id)).st_mtime
    except FileNotFoundError:
        return created
