"""Dataset: an immutable, partitioned collection with lineage (Spark's RDD), as a package of
its operation groups (one module each), assembled in :mod:`strataflow.dataset.core`."""
from strataflow.dataset.core import Dataset, StorageLevelLocked

__all__ = ["Dataset", "StorageLevelLocked"]
