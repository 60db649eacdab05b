"""strataflow: a dataflow engine for iterative analytics on data bigger than memory.

    from strataflow import Context
    with Context(memory="1GB", parallelism=2) as ctx:
        ctx.parallelize(range(10), 4).map(lambda x: x * x).sum()
"""

from strataflow.shipping.accumulators import Accumulator, AccumulatorParam
from strataflow.shipping.broadcast import Broadcast
from strataflow.config import ConfigError, parse_size
from strataflow.context import Context
from strataflow.dataset import Dataset
from strataflow.scheduler import ContextStopped, JobError, TaskFailedError
from strataflow.shuffle.key_hash import UnportableKeyError
from strataflow.io.sources import InputError, MalformedInputError
from strataflow.io.paths import SpecialFileError
from strataflow.shipping import files  # files.get(name): a file shipped with Context.add_file, in a task
from strataflow.storage.level import StorageLevel

__all__ = ["Context", "Dataset", "ConfigError", "ContextStopped", "JobError", "TaskFailedError", "StorageLevel", "parse_size", "UnportableKeyError",
           "InputError", "MalformedInputError", "SpecialFileError",
           "Broadcast", "Accumulator", "AccumulatorParam", "files"]
__version__ = "0.1.0"
