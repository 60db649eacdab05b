"""``RDD``'s persistence and checkpointing: ``cache``/``persist`` at a PySpark storage level,
``unpersist``, the checkpoint calls and the accepted-and-ignored resource profiles.

A mixin of :class:`~strataflow.pyspark.rdd.RDD`, apart because it is the one part of the
RDD that translates storage levels (PySpark's flags to strataflow's levels and back) and
turns strataflow's locked level into the ``Py4JJavaError`` PySpark programs expect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from strataflow.dataset import StorageLevelLocked
from strataflow.pyspark.errors import Py4JJavaError
from strataflow.pyspark.storagelevel import StorageLevel, as_pyspark, from_native, to_native
from strataflow.pyspark.rdd_group import RDDGroup

if TYPE_CHECKING:
    from strataflow.pyspark.rdd import RDD


T = TypeVar("T")


class RDDPersistence(RDDGroup[T]):
    """What an RDD keeps, where, and its checkpoints (a mixin of ``RDD``)."""

    _level: StorageLevel | None

    @property
    def is_cached(self) -> bool:
        """True while the RDD is persisted (``cache``/``persist`` until ``unpersist``).

        >>> rdd = sc.parallelize([1])
        >>> rdd.is_cached, rdd.cache().is_cached, rdd.unpersist().is_cached
        (False, True, False)
        """
        return self.dataset.is_cached

    def cache(self) -> "RDD[T]":
        """``persist(StorageLevel.MEMORY_ONLY)``: later jobs read the computed partitions instead of
        recomputing.

        >>> rdd = sc.parallelize(range(4)).cache()
        >>> rdd.is_cached, rdd.sum()
        (True, 6)
        >>> _ = rdd.unpersist()
        """
        return self.persist(StorageLevel.MEMORY_ONLY)

    def persist(self, storageLevel: StorageLevel = StorageLevel.MEMORY_ONLY) -> "RDD[T]":
        """Keeps computed partitions at ``storageLevel``; like Spark, the level cannot change once set
        (Py4JJavaError).

        >>> from strataflow.pyspark import StorageLevel
        >>> rdd = sc.parallelize(range(4)).persist(StorageLevel.DISK_ONLY)
        >>> rdd.sum(), rdd.getStorageLevel() == StorageLevel.DISK_ONLY
        (6, True)
        >>> _ = rdd.unpersist()
        """
        try:
            self.dataset.persist(to_native(storageLevel))
        except StorageLevelLocked as exc:
            raise Py4JJavaError(f"Cannot change storage level of an RDD after it was already assigned a level "
                                f"({exc})") from exc
        self._level = as_pyspark(storageLevel)
        return self

    def unpersist(self, blocking: bool = False) -> "RDD[T]":
        """Removes the RDD's blocks from every store (always synchronously here).

        >>> sc.parallelize([1]).cache().unpersist().is_cached
        False
        """
        self.dataset.unpersist(blocking)
        return self

    def getStorageLevel(self) -> StorageLevel:
        """The level given to ``persist`` (PySpark's flags, replication included) while the
        dataset is kept at it, else the PySpark name of the dataset's level.

        >>> from strataflow.pyspark import StorageLevel
        >>> rdd = sc.parallelize([1]).persist(StorageLevel.MEMORY_AND_DISK)
        >>> rdd.getStorageLevel() == StorageLevel.MEMORY_AND_DISK
        True
        >>> _ = rdd.unpersist()
        """
        native = self.dataset.get_storage_level()
        if isinstance(self._level, StorageLevel) and to_native(self._level) is native:
            return self._level
        return from_native(native)

    def checkpoint(self) -> None:
        """Marks the RDD to be written to the checkpoint directory by the next job that reads it; then
        its lineage is cut.

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize(range(3)).map(lambda x: x + 1)
        >>> rdd.checkpoint(); rdd.collect()
        [1, 2, 3]
        >>> rdd.isCheckpointed()
        True
        """
        self.dataset.checkpoint()

    def localCheckpoint(self) -> None:
        """As ``checkpoint``, to the application's own directory (removed by ``stop()``), no checkpoint
        directory needed.

        >>> rdd = sc.parallelize(range(3)); rdd.localCheckpoint()
        >>> rdd.collect(), rdd.isCheckpointed()
        ([0, 1, 2], True)
        """
        self.dataset.local_checkpoint()

    @property
    def is_checkpointed(self) -> bool:
        """PySpark's attribute: True once ``checkpoint()`` was called (``isCheckpointed()``
        says whether the files are written).

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize([1]); rdd.checkpoint()
        >>> rdd.is_checkpointed, rdd.isCheckpointed()
        (True, False)
        """
        return self.dataset.is_marked_for_checkpoint

    def isCheckpointed(self) -> bool:
        """True once the checkpoint files are written.

        >>> sc.parallelize([1]).isCheckpointed()
        False
        """
        return self.dataset.is_checkpointed

    def isLocallyCheckpointed(self) -> bool:
        """True from ``localCheckpoint()`` on.

        >>> rdd = sc.parallelize([1]); rdd.localCheckpoint()
        >>> rdd.isLocallyCheckpointed()
        True
        """
        return self.dataset.is_locally_checkpointed

    def getCheckpointFile(self) -> str | None:
        """The directory of the checkpoint files once written, else None.

        >>> sc.setCheckpointDir(tmp_dir)
        >>> rdd = sc.parallelize([1]); rdd.checkpoint(); _ = rdd.count()
        >>> rdd.getCheckpointFile().startswith(tmp_dir)
        True
        """
        return self.dataset.get_checkpoint_file()

    def cleanShuffleDependencies(self, blocking: bool = False) -> None:
        """Accepted: strataflow removes a shuffle's files once no dataset can read it.

        >>> sc.parallelize([("a", 1)]).reduceByKey(max).cleanShuffleDependencies()
        """

    def withResources(self, profile: Any) -> "RDD[T]":
        """Accepted and ignored: strataflow has no resource profiles.

        >>> rdd = sc.parallelize([1])
        >>> rdd.withResources(None) is rdd
        True
        """
        return self

    def getResourceProfile(self) -> None:
        """Always None: strataflow has no resource profiles.

        >>> sc.parallelize([1]).getResourceProfile() is None
        True
        """
        return None
