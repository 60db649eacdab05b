"""A block's bytes: serializing a value for disk or a serialized level, and loading it
back, timed into the cache's metrics, with every serializer failure turned into one
:class:`SerializationError` and one message that names the dataset, the serializer, the
block and the level (pickle alone raises PicklingError, TypeError, AttributeError...)."""

from __future__ import annotations

import time
from typing import Any

from strataflow.storage.blocks.block import BlockId, DatasetInfo
from strataflow.storage.cache_metrics import CacheMetrics
from strataflow.storage.blocks.serde import SERIALIZERS, SerializationError, Serializer

__all__ = ["BlockCodec"]


class BlockCodec:
    def __init__(self, metrics: CacheMetrics) -> None:
        self.metrics = metrics

    def encode(self, value: Any, info: DatasetInfo, bid: BlockId) -> tuple[list, int, Serializer]:
        """The value as frames in its dataset's serializer: (frames, bytes, serializer)."""
        ser = info.serializer.for_value(value)
        t0 = time.perf_counter()
        try:
            frames = ser.dumps(value)
        except SerializationError:
            raise
        except Exception as exc:  # pickle raises many kinds (PicklingError, TypeError, AttributeError)
            raise SerializationError(f"{type(exc).__name__}: {exc}") from exc
        size = sum(memoryview(f).nbytes for f in frames)
        self.metrics.add(serialize_s=time.perf_counter() - t0)
        return frames, size, ser

    def decode(self, data: memoryview, ser_name: str, bid: BlockId) -> Any:
        t0 = time.perf_counter()
        try:
            value = SERIALIZERS[ser_name].loads(data)
        except SerializationError:
            raise
        except Exception as exc:
            raise SerializationError(f"{ser_name} cannot load block {bid}: {exc}") from exc
        self.metrics.add(deserialize_s=time.perf_counter() - t0)
        return value

    @staticmethod
    def failure(bid: BlockId, info: DatasetInfo, exc: Exception) -> str:
        """Why a block could not be serialized, for a user who must choose another
        serializer or level."""
        return (f"dataset {info.label()}: serializer {info.serializer.name!r} cannot serialize block {bid} "
                f"(level {info.level.name}): {exc}")
