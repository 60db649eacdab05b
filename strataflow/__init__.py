"""strataflow: a dataflow engine for iterative analytics on data bigger than memory.

    from strataflow import Context
    with Context(memory="1GB", parallelism=2) as ctx:
        ctx.parallelize(range(10), 4).map(lambda x: x * x).sum()
"""

from .accumulators import Accumulator, AccumulatorParam
from .broadcast import Broadcast
from .config import ConfigError, parse_size
from .context import Context
from .dataset import Dataset
from .scheduler import ContextStopped, JobError, TaskFailedError
from .storage.level import StorageLevel

__all__ = ["Context", "Dataset", "ConfigError", "ContextStopped", "JobError", "TaskFailedError", "StorageLevel", "parse_size",
           "Broadcast", "Accumulator", "AccumulatorParam"]
__version__ = "0.1.0"
