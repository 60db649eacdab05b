"""What travels between the driver and its executors: a stage's work (sent once per
executor and stage attempt), a task (a stage key and a partition), a task's outcome, and
the errors that say an executor or a task went wrong."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from strataflow.executor.remote_errors import RemoteTaskError, portable_error

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.dataset import Dataset
    from strataflow.lineage import ShuffleDependency
    from strataflow.executor.task import TaskMetrics
    from strataflow.shuffle import MapOutput
    from strataflow.storage.blocks.location import BlockLocation

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
    blocks: list[tuple[Any, "BlockLocation", Any]]  # (block, where, its disk copy's description)
    snapshot: dict
    seconds: float = 0.0
    #: the accumulators' updates the task made (id -> value), merged by the driver once
    accumulators: dict = field(default_factory=dict)


class ExecutorLost(RuntimeError):
    """An executor went away (killed, crashed, exited) while it had work. Its tasks are
    retried up to ``max_task_attempts`` times (``retries.py``), since a user function that
    kills its process (``os._exit``) must not retry forever."""

    retryable = True

    def __init__(self, executor_id: str, reason: str) -> None:
        super().__init__(f"executor {executor_id} lost: {reason}")
        self.executor_id = executor_id
        self.reason = reason

    def __reduce__(self):
        return (ExecutorLost, (self.executor_id, self.reason))


class TaskCancelled(RuntimeError):
    """The driver cancelled the task's stage (the job failed or was interrupted)."""
