"""What travels between the driver and its executors: a stage's work (sent once per
executor and stage attempt), a task (a stage key and a partition), a task's outcome, and
the errors that say an executor or a task went wrong."""

from __future__ import annotations

import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover
    from ..dataset import Dataset
    from ..lineage import ShuffleDependency
    from ..scheduler.task import TaskMetrics
    from ..shuffle import MapOutput

__all__ = ["StageWork", "TaskSpec", "TaskOutcome", "ExecutorLost", "RemoteTaskError", "TaskCancelled",
           "portable_error"]


@dataclass(eq=False)
class StageWork:
    """Everything an executor needs to run any task of one stage attempt: the lineage and
    the action's function (cloudpickled once per stage by the driver, not once per task),
    and where the map outputs the stage reads are (the map-output tracker's answer)."""

    key: str
    stage_id: int
    job_id: int
    dataset: "Dataset"
    shuffle_dep: "ShuffleDependency | None" = None
    func: Callable | None = None
    map_outputs: dict[int, list["MapOutput | None"]] = field(default_factory=dict)
    #: the files added to the application when the stage was built (``files.py``)
    files: dict = field(default_factory=dict)

    @property
    def kind(self) -> str:
        return "shuffle-map" if self.shuffle_dep is not None else "result"


@dataclass(frozen=True)
class TaskSpec:
    """One task: what the driver sends per task once the executor has the stage."""

    stage_key: str
    partition: int
    attempt: int
    task_id: int
    #: blocks the task will read that other executors hold (BlockId -> PeerBlock)
    peers: dict | None = None


@dataclass
class TaskOutcome:
    """A finished task: its value (result tasks), its map output (map tasks), its metrics,
    where the persisted blocks it touched now live on its executor (for locality), the
    executor's cache counters after it (for stage and job differences), and its
    accumulator updates."""

    value: Any
    metrics: "TaskMetrics"
    map_output: "MapOutput | None"
    blocks: list[tuple[Any, str, Any]]  # (block, "memory" | "disk", its disk copy's description)
    snapshot: dict
    seconds: float = 0.0
    #: the accumulators' updates the task made (id -> value), merged by the driver once
    accumulators: dict = field(default_factory=dict)


class ExecutorLost(RuntimeError):
    """An executor went away (killed, crashed, exited) while it had work."""

    def __init__(self, executor_id: str, reason: str) -> None:
        super().__init__(f"executor {executor_id} lost: {reason}")
        self.executor_id = executor_id
        self.reason = reason

    def __reduce__(self):
        return (ExecutorLost, (self.executor_id, self.reason))


class TaskCancelled(RuntimeError):
    """The driver cancelled the task's stage (the job failed or was interrupted)."""


class RemoteTaskError(RuntimeError):
    """A task's exception that could not be sent back as itself (it does not pickle):
    its type name, message and the executor's traceback."""


def portable_error(exc: BaseException, dumps: Callable[[Any], bytes]) -> BaseException:
    """``exc`` with the executor's traceback attached (``remote_traceback``), or a
    :class:`RemoteTaskError` carrying the same when ``exc`` itself does not pickle."""
    import pickle

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        exc.remote_traceback = text  # type: ignore[attr-defined]
        pickle.loads(dumps(exc))  # both ways: an exception whose __init__ needs other args fails here
        return exc
    except Exception:  # noqa: BLE001 - anything that stops the exception from travelling
        err = RemoteTaskError(f"{type(exc).__module__}.{type(exc).__qualname__}: {exc}")
        err.remote_traceback = text  # type: ignore[attr-defined]
        origin = getattr(exc, "_strataflow_origin", None)
        if origin is not None:
            err._strataflow_origin = origin  # type: ignore[attr-defined]
        return err
