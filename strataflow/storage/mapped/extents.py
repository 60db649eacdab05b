"""The region store's extents: an extent's entry (:class:`RegionEntry`), the keyed tag of
its pickled bytes, and reading an extent of another executor's segment (a peer read).

Authentication, for the bytes that are unpickled. An unkeyed hash guards against accidents,
not against a forger: a ``pickle`` or ``pickle5`` extent rewritten in place (after its one
verified read, or with a colliding XXH3, which is not a cryptographic hash) would run code
when unpickled. So the bytes of an extent that ``layout.decode`` unpickles or trusts to
locate them (``meta["pickled"]``: the stream, and a pickle5 extent's buffer table and
trailer; never the out-of-band buffers, nor anything of an ``ndarray`` or ``arrow``
extent) carry a keyed BLAKE2b tag (``frame_auth.py``, the application's key), kept in the
entry, and checked before EVERY decode of the extent: it costs less than the unpickling
it guards. A failed tag is treated as a failed checksum. A store built without a key
makes its own; ``read_extent`` of another executor's extent finds the application's key
by the segment's path (``app_keys.py``). Segment files are created mode 0600.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from typing import Any, Sequence

import pyarrow as pa
import xxhash

from strataflow.storage.blocks import app_keys
from strataflow.storage.blocks.frame_auth import FrameAuth, same
from strataflow.storage.mapped import layout
from strataflow.storage.mapped import segment_file
from strataflow.storage.tier_store import BlockUnavailable

__all__ = ["RegionEntry", "read_extent"]

_DOMAIN = b"sf-region-v1"
_SPANS = struct.Struct("<QQQB")  # extent length, pickled head, pickled tail, kind's length


def _slice(views: Sequence[memoryview], start: int, stop: int) -> list[memoryview]:
    """Bytes ``start:stop`` of the views written back to back, as views (no copy)."""
    out = []
    pos = 0
    for v in views:
        lo, hi = max(start - pos, 0), min(stop - pos, v.nbytes)
        if lo < hi:
            out.append(v[lo:hi])
        pos += v.nbytes
    return out


def _tag(auth: FrameAuth, kind: str, length: int, spans: tuple[int, int], views: Sequence[memoryview]) -> bytes:
    """The tag of an extent's pickled bytes (its first ``head`` and last ``tail`` bytes)."""
    head, tail = spans
    name = kind.encode()
    parts = [_SPANS.pack(length, head, tail, len(name)), name]
    return auth.tag(_DOMAIN, *parts, *_slice(views, 0, head), *_slice(views, length - tail, length))


@dataclass(frozen=True)
class RegionEntry:
    segment: str  # the segment file's path
    offset: int
    length: int
    kind: str  # a layout kind: ndarray, arrow, pickle5, pickle
    meta: dict
    digest: int  # xxh3-64 of the extent
    zero_copy: bool
    #: keyed tag of the bytes that decoding unpickles (``meta["pickled"]``); empty when none is
    tag: bytes = field(default=b"", repr=False)

    @property
    def size(self) -> int:
        """Bytes of the extent (``StoreEntry.size``; alignment padding not counted)."""
        return self.length

    @property
    def pickled(self) -> tuple[int, int]:
        """``(head, tail)``: the bytes at the extent's ends that decoding unpickles."""
        return tuple(self.meta.get("pickled", (self.length, 0)))  # type: ignore[return-value]


def _authentic(auth: FrameAuth, entry: RegionEntry, view: memoryview) -> bool:
    """Whether the extent's pickled bytes are the ones its entry's tag was made for, and
    the only ones ``layout.decode`` would unpickle. True for an extent with none."""
    spans = entry.pickled
    if spans == (0, 0):
        return entry.kind not in ("pickle", "pickle5")  # a pickled kind always has a span
    if layout.pickled_spans(entry.kind, view) != spans:
        return False
    return same(entry.tag, _tag(auth, entry.kind, entry.length, spans, [view]))


def read_extent(entry: RegionEntry, auth: FrameAuth | None = None) -> Any:
    """The value of an extent of another store's segment (another executor's, on this
    machine), mapped zero-copy like ``get``. Its checksum is verified at every such
    read: this store does not know when the owner removed, reclaimed or rewrote the
    segment. Raises BlockUnavailable if it is gone, short, corrupt, unauthenticated or
    undecodable. Without ``auth`` the key is the application's that registered the
    segment's directory (``app_keys.py``)."""
    auth = auth or app_keys.auth_for(entry.segment)
    if auth is None:
        raise BlockUnavailable(f"segment {entry.segment} is not under a directory of this application: "
                               f"no key to authenticate it")
    try:
        size = os.stat(entry.segment).st_size  # first: touching a page past EOF is SIGBUS
        if size < entry.offset + entry.length:
            raise BlockUnavailable(f"segment {entry.segment} has {size} bytes, the block ends at "
                                   f"{entry.offset + entry.length}")
        buf = segment_file.map_file(entry.segment)
    except (OSError, pa.ArrowException) as exc:
        raise BlockUnavailable(f"segment {entry.segment} cannot be read: {exc}") from None
    view = memoryview(buf)[entry.offset : entry.offset + entry.length]
    if xxhash.xxh3_64_intdigest(view) != entry.digest:
        raise BlockUnavailable(f"an extent of {entry.segment} fails its checksum")
    if not _authentic(auth, entry, view):
        raise BlockUnavailable(f"an extent of {entry.segment} fails authentication: not written by this "
                               f"application, or corrupt")
    try:
        return layout.decode(entry.kind, view, entry.meta)
    except Exception as exc:  # noqa: BLE001 - changed under us after the check
        raise BlockUnavailable(f"an extent of {entry.segment} cannot be decoded: {exc}") from exc
