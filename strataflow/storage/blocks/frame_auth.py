"""Keyed tags for the bytes the engine will unpickle from its own files.

Why. Cache blocks, region extents, shuffle buckets, aggregation spills and source slices
are pickles on disk. Their old guard, an unkeyed hash (XXH3, CRC32), catches a flipped bit
but not a forger: anyone who can put a file of the right size with a valid hash where the
engine looks runs arbitrary code in the job the moment it is unpickled. A tag made with a
secret key cannot be forged without the key, so a file whose pickled bytes carry a valid
tag was written by this application.

How. One secret per application (:func:`new_key`, 32 bytes from :mod:`secrets`, made by
the driver and handed to its executors in memory, never written to disk); the tag is
keyed BLAKE2b-256 from :mod:`hashlib`, with a *domain* (BLAKE2b's personalization: which
kind of frame) so that a tag made for one kind never verifies as another; tags are
compared in constant time (:func:`hmac.compare_digest`). Only the bytes that ``pickle``
will parse (and the small headers that locate them) are tagged: raw numeric buffers,
never unpickled, keep their fast unkeyed checksum, so the MAC stays off the numeric hot
path. Each caller frames its own variable-length parts behind fixed-size length fields,
so the concatenation a tag covers is unambiguous.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

__all__ = ["FrameAuth", "new_key", "same", "KEY_BYTES", "TAG_BYTES"]

KEY_BYTES = 32
TAG_BYTES = 32  # BLAKE2b-256


def new_key() -> bytes:
    """A fresh application secret."""
    return secrets.token_bytes(KEY_BYTES)


class FrameAuth:
    """Makes and checks the keyed tags of one application's frames.

    Built without a key it makes its own random one: a store that nobody gave a key
    (a unit test's) still authenticates everything it reads back, it just cannot read
    another store's files. It refuses to be pickled, so that the key never travels by
    accident inside a task or a stage (it travels only where meant to: the executor's
    spec, over the driver's private socket)."""

    __slots__ = ("_key",)

    def __init__(self, key: bytes | None = None) -> None:
        key = new_key() if key is None else bytes(key)
        if not 16 <= len(key) <= 64:  # BLAKE2b takes keys of up to 64 bytes
            raise ValueError(f"an authentication key must have 16 to 64 bytes, not {len(key)}")
        self._key = key

    @property
    def key(self) -> bytes:
        return self._key

    def hasher(self, domain: bytes) -> Any:
        """An incremental keyed hash for ``domain`` (at most 16 bytes): ``update`` it with
        the frame's parts, then compare its ``digest()`` with :meth:`same`."""
        return hashlib.blake2b(key=self._key, digest_size=TAG_BYTES, person=domain)

    def tag(self, domain: bytes, *parts: Any) -> bytes:
        """The tag of the concatenation of ``parts`` (bytes-like)."""
        h = self.hasher(domain)
        for p in parts:
            h.update(p)
        return h.digest()

    def verify(self, tag: bytes, domain: bytes, *parts: Any) -> bool:
        """Whether ``tag`` is this key's tag of ``parts`` (constant-time comparison)."""
        return same(tag, self.tag(domain, *parts))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, FrameAuth) and hmac.compare_digest(self._key, other._key)

    def __hash__(self) -> int:
        return hash(self.tag(b"sf-auth-id"))

    def __repr__(self) -> str:
        return "FrameAuth(<secret key>)"

    def __reduce__(self):
        raise TypeError("a FrameAuth holds the application's secret key and is not pickled")


def same(expected: bytes, got: bytes) -> bool:
    """Constant-time equality of two tags."""
    return hmac.compare_digest(bytes(expected), bytes(got))
