"""Where a store lives and who may use it: its root directory, its tiers, its key.

A store is a directory tree owned by one user. The *root* holds the catalog, the locks and
the key; each *tier* is a directory whose ``data/<dataset id>/`` holds that dataset's block
files (the first tier is the root itself unless configured otherwise):

```text
<root>/                         0700, owned by the user
  store.key                     0600: the store's own secret (blocks' keyed tags)
  store.json                    0600: the tiers, fastest first, with their capacities
  gc.lock                       flock: sweeps (exclusive) against publishes (shared)
  catalog/<name>.json           published datasets (one tagged JSON entry each)
  writing/<id>.lock             a save in progress: flock held by its writer, + pid and start time
  leases/<id>/<pid>-<n>.lease   a reader's hold on a dataset (flock held while it reads)
  data/<id>/part-00000.sfb      block files of the first tier
<tier dir>/data/<id>/...        block files of another tier
```

Only the same user: every directory is made 0700 and every file 0600 whatever the umask
(``common/private_file.py``), and a root or tier that exists is refused unless it is a real
directory (not a symbolic link) owned by the effective user with no group or other
permission bits: a store in ``/dev/shm`` or ``/tmp`` (shared, sticky directories) must not
be one another user made in advance. The key file is checked the same way. A store needs its
own key, not an application's: two applications (one saves, a later one opens) have
different application keys (``storage/blocks/app_keys.py``).

Where by default: on disk, in the user's cache directory (``$XDG_CACHE_HOME/strataflow/store``,
``~/.cache/strataflow/store`` where that is unset). A store outlives every application, and
what nobody asked to keep must not pin the machine's memory: a file in ``/dev/shm`` (tmpfs)
is memory that counts against every memory limit and is never reclaimed while it exists,
where a disk file's pages are page cache the kernel takes back under pressure (and a warm
read of it is a memory read all the same). A tier on a memory file system is used as the
user configures it; without a capacity it takes at most :data:`MEMORY_TIER_ROOM` of what the
store puts there by itself (cached inputs, datasets moved up): :func:`unbounded_room`.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import tempfile
from dataclasses import dataclass

import psutil

from strataflow.common.checks import parse_size
from strataflow.common.private_file import PRIVATE_DIR, atomic_write, make_dirs, mkstemp_private
from strataflow.storage.blocks.frame_auth import KEY_BYTES, FrameAuth, new_key
from strataflow.store.errors import StoreAccessError, StoreError, StoreNotFound
from strataflow.store.verified import DEFAULT as VERIFY_DEFAULT
from strataflow.store.verified import MODES as VERIFY_MODES

__all__ = ["default_root", "former_default_root", "existing_root", "Tier", "StoreRoot", "check_private",
           "prepare_dir", "tier_bytes", "memory_backed", "unbounded_room", "MEMORY_TIER_ROOM"]

KEY_FILE = "store.key"
CONFIG_FILE = "store.json"

#: file systems whose files are the machine's memory (never written back, never reclaimed)
MEMORY_FILE_SYSTEMS = frozenset({"tmpfs", "ramfs", "hugetlbfs"})
#: what a tier on a memory file system without a capacity takes of what the store puts
#: there by itself (cached inputs, datasets moved up from a lower tier)
MEMORY_TIER_ROOM = 256 * 2**20


def default_root() -> str:
    """The user's default store: on disk, ``$XDG_CACHE_HOME/strataflow/store`` (by default
    ``~/.cache/strataflow/store``); under the temporary directory
    (``strataflow-store-<uid>``) for a user with no home directory of their own."""
    cache = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(cache):
        home = os.path.expanduser("~")
        if not os.path.isabs(home) or home == "/" or not os.access(home, os.W_OK | os.X_OK):
            return os.path.join(tempfile.gettempdir(), f"strataflow-store-{os.geteuid()}")
        cache = os.path.join(home, ".cache")
    return os.path.join(cache, "strataflow", "store")


def former_default_root() -> str:
    """Where the default store was before it moved to disk (memory: ``/dev/shm``), which
    ``strataflow store status`` reports while it holds anything."""
    return os.path.join("/dev/shm", f"strataflow-store-{os.geteuid()}")


@functools.lru_cache(maxsize=256)
def _file_system(path: str) -> str:
    best, kind = "", ""
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        if (path == mount or path.startswith(mount.rstrip("/") + "/")) and len(mount) > len(best):
            best, kind = mount, part.fstype
    return kind


def memory_backed(path: str) -> bool:
    """Whether ``path`` lies on a memory file system (tmpfs, ramfs): its files are memory."""
    return _file_system(os.path.realpath(path)) in MEMORY_FILE_SYSTEMS


def unbounded_room(directory: str, held: int) -> int:
    """The most bytes that what the store puts in a tier without a capacity by itself may
    reach, ``held`` of them there already: half of the device's free space counting them
    (so a disk never fills), and on a memory file system at most :data:`MEMORY_TIER_ROOM`
    too (so memory nobody asked for stays small). 0 when the directory cannot be asked."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return 0
    room = (st.f_bavail * st.f_frsize + held) // 2
    return min(room, MEMORY_TIER_ROOM) if memory_backed(directory) else room


def existing_root(path: str | os.PathLike | None = None) -> str:
    """The absolute path of the store at ``path`` (default: the user's), if there is one;
    :class:`StoreNotFound` naming the path otherwise. Unlike :class:`StoreRoot` it makes
    nothing: the commands that only use an existing store (``strataflow store ls``,
    ``rm``, ...) must report a mistyped root, not make an empty store there and list it."""
    whose = "" if path is not None else " (the default store)"
    path = os.path.abspath(os.path.expanduser(os.fspath(path if path is not None else default_root())))
    made_by = ("check the path; a store is made by an application's first ctx.store (Context(store=DIR)) or by "
               "`strataflow store start --root DIR`")
    if not os.path.lexists(path):
        raise StoreNotFound(f"no store at {path}{whose}: no such directory. {made_by[0].upper()}{made_by[1:]}")
    if not os.path.isdir(path):
        raise StoreNotFound(f"no store at {path}{whose}: it is a file, not a store's directory")
    try:
        found = [os.path.lexists(os.path.join(path, f)) for f in (KEY_FILE, CONFIG_FILE, "catalog")]
        os.listdir(path)
    except PermissionError:
        return path  # StoreRoot says whose it is and what to do
    if not any(found):
        raise StoreNotFound(f"no store at {path}{whose}: the directory holds no store (no {KEY_FILE}, "
                            f"{CONFIG_FILE} or catalog/ in it): {made_by}")
    return path


def check_private(path: str, what: str, directory: bool = True) -> os.stat_result:
    """``path``'s lstat, if it is a real directory (or regular file) owned by the effective
    user with no group or other permission bits; StoreAccessError naming the fault and
    the fix otherwise."""
    st = os.lstat(path)
    kind_ok = stat.S_ISDIR(st.st_mode) if directory else stat.S_ISREG(st.st_mode)
    if not kind_ok:
        kind = "symbolic link" if stat.S_ISLNK(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) \
            else "file of another kind"
        raise StoreAccessError(f"{what} {path!r} is a {kind}, not a {'directory' if directory else 'regular file'}; "
                               f"a store's files must be its own")
    if st.st_uid != os.geteuid():
        raise StoreAccessError(f"{what} {path!r} belongs to uid {st.st_uid}, not to you (uid {os.geteuid()}): only "
                               f"the user who owns a store may use it; give a directory of your own")
    if st.st_mode & 0o077:
        mode = stat.S_IMODE(st.st_mode)
        writable = "group/world-writable" if st.st_mode & 0o022 else "readable by other users"
        raise StoreAccessError(f"{what} {path!r} has mode {mode:04o} ({writable}): a store must be private "
                               f"(chmod {'700' if directory else '600'} {path})")
    return st


def prepare_dir(path: str, what: str) -> str:
    """``path`` as an absolute path, made 0700 (with missing parents) if absent, and
    checked private (:func:`check_private`)."""
    path = os.path.abspath(os.path.expanduser(os.fspath(path)))
    try:
        make_dirs(path, PRIVATE_DIR)
    except PermissionError as exc:
        raise StoreAccessError(f"{what}: cannot reach or create directory {path!r}: permission denied at "
                               f"{exc.filename!r} (another user's directory?); give a directory of your own") from exc
    except OSError as exc:
        raise StoreError(f"{what}: cannot create directory {path!r}: {exc.strerror} ({exc.filename!r})") from exc
    try:
        check_private(path, what)
    except PermissionError as exc:
        if isinstance(exc, StoreAccessError):
            raise
        raise StoreAccessError(f"{what}: cannot reach directory {path!r}: permission denied "
                               f"(another user's directory?); give a directory of your own") from exc
    return path


@dataclass(frozen=True)
class Tier:
    """A tier of the store: a directory for block files, and the most bytes they may take
    there (None: the device's free space)."""

    name: str
    dir: str
    capacity: int | None = None

    def data_dir(self, dataset_id: str | None = None) -> str:
        d = os.path.join(self.dir, "data")
        return d if dataset_id is None else os.path.join(d, dataset_id)

    def to_json(self) -> dict:
        return {"name": self.name, "dir": self.dir, "capacity": self.capacity}


def _tiers_from(raw: object, root: str) -> list[Tier]:
    """Tiers from ``store.json`` or a caller: a list of ``{"name", "dir", "capacity"}``
    (capacity a size such as ``"2GB"`` or None). None: one tier, the root."""
    if raw is None:
        return [Tier("mem" if memory_backed(root) else "disk", root, None)]
    tiers = []
    for i, t in enumerate(raw):  # type: ignore[union-attr]
        if not isinstance(t, dict) or "dir" not in t:
            raise StoreError(f"store tier {i}: expected {{'name': ..., 'dir': ..., 'capacity': ...}}, got {t!r}")
        cap = t.get("capacity")
        tiers.append(Tier(str(t.get("name") or f"tier{i}"), os.path.abspath(os.path.expanduser(t["dir"])),
                          None if cap is None else parse_size(cap, f"store tier {t.get('name', i)} capacity")))
    if not tiers:
        raise StoreError("a store needs at least one tier")
    return tiers


class StoreRoot:
    """A store's root directory, checked and made: its paths, tiers, key and how its
    block files' digests are checked (``verify``: "store", the default, or
    "process": ``verified.py``). Cheap to build; every process using the store (driver and executors)
    builds its own."""

    def __init__(self, path: str | os.PathLike | None = None, tiers: list[dict] | None = None,
                 verify: str | None = None) -> None:
        if verify is not None and verify not in VERIFY_MODES:
            raise StoreError(f"store verify={verify!r}: expected one of {', '.join(map(repr, VERIFY_MODES))}")
        self.path = prepare_dir(path if path is not None else default_root(), "store root")
        for sub in ("catalog", "writing", "leases", "data"):
            prepare_dir(os.path.join(self.path, sub), "store directory")
        self.tiers, self.verify = self._load_config(tiers, verify)
        for t in self.tiers:
            prepare_dir(t.dir, f"store tier {t.name!r}")
            prepare_dir(t.data_dir(), f"store tier {t.name!r}")
        self._auth: FrameAuth | None = None

    # -- paths ---------------------------------------------------------------------------------
    def sub(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    @property
    def catalog_dir(self) -> str:
        return self.sub("catalog")

    def records_dir(self, dataset_id: str) -> str | None:
        """Where the dataset's verification records go (``verified.py``); None unless the
        store checks digests once per file (``verify="store"``)."""
        return self.sub("verified", dataset_id) if self.verify == "store" else None

    # -- tiers ---------------------------------------------------------------------------------
    def _load_config(self, given: list[dict] | None, verify: str | None) -> tuple[list[Tier], str]:
        """The tiers and the verify mode ``store.json`` records; ``given`` ones replace them
        (and are recorded), so every later user of the store, the daemon included, sees the
        same ones."""
        cfg = self.sub(CONFIG_FILE)
        try:
            check_private(cfg, "store configuration", directory=False)
            with open(cfg, "rb") as fh:
                raw = json.loads(fh.read())
            raw_tiers, raw_verify = raw["tiers"], raw.get("verify", VERIFY_DEFAULT)
            if raw_verify not in VERIFY_MODES:
                raise StoreError(f"store configuration {cfg!r}: verify={raw_verify!r} is not one of "
                                 f"{', '.join(map(repr, VERIFY_MODES))}")
        except FileNotFoundError:
            raw_tiers, raw_verify = None, VERIFY_DEFAULT
        except (StoreError, ValueError, KeyError, TypeError, AttributeError) as exc:
            if given is None:  # given tiers replace a configuration, even one not readable
                if isinstance(exc, StoreError):
                    raise
                raise StoreError(f"store configuration {cfg!r} is unreadable: {exc}") from exc
            raw_tiers, raw_verify = None, VERIFY_DEFAULT
        tiers = _tiers_from(given if given is not None else raw_tiers, self.path)
        if given is not None or (verify is not None and verify != raw_verify):
            recorded = [t.to_json() for t in tiers] if given is not None else raw_tiers
            with atomic_write(cfg, sync=True) as fh:
                fh.write(json.dumps({"tiers": recorded, "verify": verify or raw_verify}, indent=1).encode())
        return tiers, verify or raw_verify

    # -- the key -------------------------------------------------------------------------------
    @property
    def auth(self) -> FrameAuth:
        """The store's key (made at the store's first use, 0600, never replaced)."""
        if self._auth is None:
            self._auth = FrameAuth(load_key(self.path))
        return self._auth


def load_key(root: str) -> bytes:
    """The key of the store at ``root``, made if absent: written whole under a temporary
    name, then linked into place (``link`` fails if another process made it first: every
    process ends up with the one key)."""
    path = os.path.join(root, KEY_FILE)
    try:
        return _read_key(path)
    except FileNotFoundError:
        pass
    fd, tmp = mkstemp_private(root, ".store.key.", ".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(new_key())
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
    finally:
        os.unlink(tmp)
    return _read_key(path)


def _read_key(path: str) -> bytes:
    check_private(path, "store key", directory=False)
    with open(path, "rb") as fh:
        key = fh.read()
    if len(key) != KEY_BYTES:
        raise StoreAccessError(f"store key {path!r} has {len(key)} bytes, not {KEY_BYTES}: damaged; remove the "
                               f"store (its blocks cannot be authenticated without it)")
    return key


def tier_bytes(tier: Tier) -> int:
    """Bytes of the block files in ``tier`` (a walk of its data directory)."""
    total = 0
    try:
        dataset_dirs = list(os.scandir(tier.data_dir()))
    except FileNotFoundError:
        return 0
    for d in dataset_dirs:
        try:
            for f in os.scandir(d.path):
                try:
                    total += f.stat(follow_symlinks=False).st_size
                except FileNotFoundError:
                    continue
        except (FileNotFoundError, NotADirectoryError):
            continue
    return total
