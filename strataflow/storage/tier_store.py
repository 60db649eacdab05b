"""The contract of a store below memory, written down: what the block manager, the tier
stack (``disk/tiers.py``), the peer reads (``peer_blocks.py``) and the status queries
(``status.py``) use of a store, and nothing else.

Two protocols, because there are two kinds of store below memory:

- :class:`TierStore`: what *every* store below memory offers -- an index of blocks to
  entries, byte accounting against a capacity, removal, and reading an entry another
  executor of this machine reported (a *peer* read). The disk store
  (``disk/disk_store.py``) and the mapped region store (``mapped/region_store.py``)
  both satisfy it.
- :class:`StackedStore`: a :class:`TierStore` the tier stack can hold, i.e. a *tier
  kind*. It takes a block's serialized frames and gives back the verified payload, and
  it is built from a tier spec (:meth:`StackedStore.from_spec`). The mapped store is not
  one: it stores values in its own zero-copy layout and its segments cannot move between
  tiers without breaking the views readers hold.

A new tier kind is one class satisfying :class:`StackedStore`, registered under a name in
:data:`strataflow.storage.disk.kinds.TIER_KINDS`; a tier spec's ``kind`` key picks it.

Errors are part of the contract, and they are the two defined here (with ``OSError``):

- :class:`DiskFull`: no room (the store's capacity or the device). The stack reacts by
  moving blocks down or trying the next tier; the block manager by not caching the block.
- :class:`BlockUnavailable`: a block is missing, short, corrupt or fails authentication.
  The block manager forgets it and recomputes the partition from lineage. A store must
  never hand back bytes it has not verified.
- any other ``OSError`` from ``put``: the directory cannot be written; the block is not
  cached (reported), nothing else is assumed.

Thread-safety: every method of a store may be called from several threads at once (task
threads, the background eviction writer, the tier stack's moves), and none may block on
another block's I/O while holding the store's own lock. Nothing in this contract is
called under the memory manager's lock (see ``policies/base.py``), so any method may do
file I/O.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.storage.disk.tier_spec import TierSpec

__all__ = ["DiskFull", "BlockUnavailable", "StoreEntry", "TierStore", "StackedStore", "Decode"]


class DiskFull(OSError):
    """No room for a block (device full or the store's capacity reached). Should one end a
    task, it is the infrastructure's fault: the task is retried (``retries.py``)."""

    retryable = True


class BlockUnavailable(Exception):
    """A block file is missing, short, or fails its checksum or its authentication. Should
    one end a task, it is the infrastructure's fault: the task is retried (``retries.py``)."""

    retryable = True


#: ``decode(payload, serializer_name)``: a block's value from its verified payload (the
#: block manager's codec); handed to :meth:`TierStore.load_entry`
Decode = Callable[[memoryview, str], Any]


@runtime_checkable
class StoreEntry(Protocol):
    """Where a store keeps one block: a small, picklable, immutable description (it travels
    to the driver in task reports and to other executors as a peer location)."""

    @property
    def size(self) -> int:
        """Bytes the block takes in the store: what its capacity counts."""
        ...


@runtime_checkable
class TierStore(Protocol):
    """What every store below memory offers. All methods are thread-safe; the queries
    (``in``, ``entry``, ``items``, ``used``, ``free``) never block on I/O."""

    #: the directories the store writes (made and owned by the executor; removed when it is lost)
    dirs: list[str]
    #: bytes the store may hold (None: no bound but the device's)
    capacity: int | None
    #: the class of its entries: a peer's entry is read by the store class whose it is
    entry_type: type

    @property
    def used(self) -> int:
        """Bytes the store holds now, as its capacity counts them."""
        ...

    @property
    def free(self) -> int | None:
        """Bytes left under ``capacity`` (None: no capacity but the device's). A hint: a
        concurrent put may take the room before the caller's does."""
        ...

    def __contains__(self, block_id: Any) -> bool:
        """Whether the block is indexed here (a later read may still find it bad)."""
        ...

    def entry(self, block_id: Any) -> StoreEntry | None:
        """The block's entry, or None if the store does not hold it."""
        ...

    def items(self) -> list[tuple[Any, StoreEntry]]:
        """A snapshot of every ``(block_id, entry)`` held now."""
        ...

    def remove(self, block_id: Any) -> StoreEntry | None:
        """Forgets the block and frees its bytes; returns its entry (None if it was not
        here). May delete files; never raises for a block already gone."""
        ...

    @classmethod
    def load_entry(cls, entry: Any, decode: Decode) -> tuple[Any, int]:
        """``(value, bytes read)`` of the block an entry describes, read by an executor
        other than the one whose store made it (a peer read, on the same machine), with
        the application's key found by the file's path (``app_keys.py``). The file may
        have gone or changed since the entry was made: raises :class:`BlockUnavailable`
        then, after verifying everything it hands to ``decode``. Blocks on file I/O."""
        ...


@runtime_checkable
class StackedStore(TierStore, Protocol):
    """A tier kind: a :class:`TierStore` that the tier stack (``disk/tiers.py``) holds
    as one tier. Blocks arrive serialized (frames) and leave as the verified payload."""

    #: the kind's own tier-spec keys, each with the parser that validates its value when the
    #: configuration is read (``parser(value, option_name)``, raising ``ConfigError``);
    #: the parsed values reach :meth:`from_spec` in ``spec.options``. A value may arrive as
    #: text (the CLI's ``--tier name=...,KEY=VALUE``): a parser reads both.
    spec_options: dict[str, Callable[[Any, str], Any]]

    @classmethod
    def from_spec(cls, spec: "TierSpec", dirs: Sequence[str], capacity: int | None,
                  key: bytes | None) -> "StackedStore":
        """The store of one tier of one executor: ``dirs`` are the executor's own
        directories of the tier (made already), ``capacity`` its share of the tier's,
        ``key`` the application's secret (``frame_auth.py``)."""
        ...

    def footprint(self, payload_size: int, serializer: str) -> int:
        """Bytes a block of this payload would take here (what ``capacity`` counts): the
        stack skips a tier whose capacity is smaller, without trying to write."""
        ...

    def put(self, block_id: Any, frames: list, payload_size: int, serializer: str) -> StoreEntry:
        """Writes the block (the frames back to back, ``payload_size`` bytes) and returns
        its entry; a block already here returns its entry unwritten, and two puts of one
        block never write at once. Blocks on file I/O. Raises :class:`DiskFull` (no room:
        nothing is left behind and no bytes stay reserved) or ``OSError``."""
        ...

    def get(self, block_id: Any) -> tuple[memoryview, str]:
        """The block's verified payload and its serializer's name. Blocks on file I/O.
        Raises :class:`BlockUnavailable` (not here, or bad: the caller removes it)."""
        ...
