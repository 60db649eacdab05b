"""The requests the driver (or, through it, another executor) sends an executor, one
frozen dataclass each: what it asks for, its fields named for what they are, and a
``Literal`` ``op`` that names it in logs and errors. ``ExecutorCore.handle`` finds the
one handler of a request by its type (``core.py``); every backend carries a request as
it is -- called in the driver's process (threads), pickled over the socket (processes),
or passed to the actor (Ray) -- so these records are plain data that pickle and compare
by value, and decide nothing themselves.

Running tasks is not here: a stage's work and its tasks travel as ``work.StageWork`` and
``work.TaskSpec``, sent by ``submit``, not ``call``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, Literal, Union, get_args

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.shuffle import MapOutput
    from strataflow.storage.blocks.block import BlockId

__all__ = ["GetMetrics", "GetCacheSnapshot", "GetStorageStatus", "Unpersist", "MeasureTiers", "ForgetStage",
           "CancelStage", "FetchBlock", "RemoveLostExecutor", "RemoveMapOutputs", "ForgetShuffles",
           "ForgetBroadcasts", "GetRegistrySizes", "Ping", "Preload", "ExecutorRequest", "REQUEST_TYPES"]


# -- questions: the driver reads the executor's state ------------------------------------------
@dataclass(frozen=True)
class GetMetrics:
    """The executor's cache, memory and GC figures: its part of ``Context.metrics()``."""

    op: ClassVar[Literal["metrics"]] = "metrics"


@dataclass(frozen=True)
class GetCacheSnapshot:
    """The executor's cache counters now (what every task outcome carries), for a caller
    that wants them between tasks."""

    op: ClassVar[Literal["snapshot"]] = "snapshot"


@dataclass(frozen=True)
class GetStorageStatus:
    """What the executor holds of each persisted dataset, where: its part of
    ``Context.storage_status()``."""

    op: ClassVar[Literal["storage_status"]] = "storage_status"


@dataclass(frozen=True)
class MeasureTiers:
    """Each disk tier's bandwidth, measured by writing and reading ``size`` bytes: the
    executors of a machine share its devices, so the driver asks one
    (``Context.measure_tiers``)."""

    size: int
    op: ClassVar[Literal["measure_tiers"]] = "measure_tiers"


@dataclass(frozen=True)
class GetRegistrySizes:
    """The size of every table a long-lived executor keeps (``introspect.py``), so tests
    and ``benchmarks/soak.py`` can show that none grows with the iterations."""

    op: ClassVar[Literal["registry_sizes"]] = "registry_sizes"


@dataclass(frozen=True)
class Ping:
    """The executor's id: that it is there and answers its control messages."""

    op: ClassVar[Literal["ping"]] = "ping"


# -- blocks: another executor's task reads one held here ------------------------------------------
@dataclass(frozen=True)
class FetchBlock:
    """The value of a block held here, for another executor's task that reads it
    (``peer_blocks.py``): sent by the driver's relay (processes) or the reading actor
    (Ray). A block no longer held is refused with ``BlockUnavailable``; the reader then
    recomputes it."""

    block_id: "BlockId"
    op: ClassVar[Literal["block"]] = "block"


# -- what the driver no longer needs: the executor drops its copy -------------------------------
@dataclass(frozen=True)
class Unpersist:
    """The dataset was unpersisted: its blocks go from every store here, with what the
    executor measured of it. Answers how many blocks were removed."""

    dataset_id: int
    op: ClassVar[Literal["unpersist"]] = "unpersist"


@dataclass(frozen=True)
class ForgetStage:
    """The stage is over: the executor drops its work (its lineage and functions)."""

    stage_key: str
    op: ClassVar[Literal["forget_stage"]] = "forget_stage"


@dataclass(frozen=True)
class CancelStage:
    """The stage's job failed or was interrupted: its running tasks stop at their next
    partition read, and later ones are refused."""

    stage_key: str
    op: ClassVar[Literal["cancel_stage"]] = "cancel_stage"


@dataclass(frozen=True)
class RemoveLostExecutor:
    """Another executor of this node was lost: its directories are removed here, since
    on a cluster the driver cannot reach that node's disk. Answers how many there were."""

    executor_id: str
    op: ClassVar[Literal["remove_lost_executor"]] = "remove_lost_executor"


@dataclass(frozen=True)
class RemoveMapOutputs:
    """No dataset reads these shuffle map outputs any more: the ones written in this
    executor's shuffle directories are removed (on a cluster the driver cannot); others
    are refused. Answers how many were removed."""

    outputs: "tuple[MapOutput, ...]"
    op: ClassVar[Literal["remove_map_outputs"]] = "remove_map_outputs"


@dataclass(frozen=True)
class ForgetShuffles:
    """The driver removed these shuffles: their cached indexes go now, not at the
    executor's next stage."""

    shuffle_ids: tuple[int, ...]
    op: ClassVar[Literal["forget_shuffles"]] = "forget_shuffles"


@dataclass(frozen=True)
class ForgetBroadcasts:
    """These broadcasts were unpersisted or collected on the driver: the executor drops
    its loaded copies (a later task loads one again). Answers how many it held."""

    broadcast_ids: tuple[str, ...]
    op: ClassVar[Literal["forget_broadcast"]] = "forget_broadcast"


# -- a head start ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Preload:
    """The modules the coming tasks import (``Fleet.preload``), imported now on a thread
    of their own so the first task does not wait for them; answered at once."""

    modules: tuple[str, ...]
    op: ClassVar[Literal["preload"]] = "preload"


#: every request an executor answers; ``ExecutorCore`` has one handler for each
ExecutorRequest = Union[GetMetrics, GetCacheSnapshot, GetStorageStatus, MeasureTiers, GetRegistrySizes, Ping,
                        FetchBlock, Unpersist, ForgetStage, CancelStage, RemoveLostExecutor, RemoveMapOutputs,
                        ForgetShuffles, ForgetBroadcasts, Preload]

#: the request classes, in ``ExecutorRequest``'s order
REQUEST_TYPES: tuple[type, ...] = get_args(ExecutorRequest)
