"""``sc.statusTracker()``: jobs and stages as PySpark's StatusTracker reports them.

A listener on the Context's event bus keeps the latest jobs and stages (the last 1,000 of
each, as Spark's UI retains): a job's stages, status and group, a stage's tasks. The job
group is the one ``setJobGroup`` set on the thread that started the job (the JobStart
event is posted on that thread).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable, NamedTuple

__all__ = ["StatusTracker", "SparkJobInfo", "SparkStageInfo", "StatusListener"]

_RETAINED = 1000


class SparkJobInfo(NamedTuple):
    """A job as ``StatusTracker.getJobInfo`` reports it: its id, its stages' ids, and its
    status (``RUNNING``, ``SUCCEEDED`` or ``FAILED``; PySpark also has ``UNKNOWN``).

    >>> sc.setJobGroup("job-info", "a job to look at")
    >>> _ = sc.parallelize([1, 2], 2).count()
    >>> tracker = sc.statusTracker()
    >>> tracker.getJobInfo(tracker.getJobIdsForGroup("job-info")[0]).status
    'SUCCEEDED'
    >>> sc.setLocalProperty("spark.jobGroup.id", None)
    """

    jobId: int
    stageIds: list
    status: str  # RUNNING, SUCCEEDED or FAILED


class SparkStageInfo(NamedTuple):
    """A stage as ``StatusTracker.getStageInfo`` reports it: ids, name and its tasks' counts
    (of its latest attempt).

    >>> sc.setJobGroup("stage-info", "a stage to look at")
    >>> _ = sc.parallelize([1, 2, 3], 3).count()
    >>> tracker = sc.statusTracker()
    >>> job = tracker.getJobInfo(tracker.getJobIdsForGroup("stage-info")[0])
    >>> stage = tracker.getStageInfo(job.stageIds[-1])
    >>> stage.numTasks, stage.numCompletedTasks, stage.numFailedTasks, stage.numActiveTasks
    (3, 3, 0, 0)
    >>> sc.setLocalProperty("spark.jobGroup.id", None)
    """

    stageId: int
    currentAttemptId: int
    name: str
    numTasks: int
    numActiveTasks: int
    numCompletedTasks: int
    numFailedTasks: int


class _Stage:
    __slots__ = ("stage_id", "attempt", "name", "num_tasks", "active", "completed", "failed", "done")

    def __init__(self, stage_id: int, name: str) -> None:
        self.stage_id, self.name = stage_id, name
        self.attempt = self.num_tasks = self.active = self.completed = self.failed = 0
        self.done = False


class StatusListener:
    """Records JobStart/End, StageStart/End/Skipped and TaskStart/End events."""

    def __init__(self, job_group: Callable[[], str | None]) -> None:
        self._job_group = job_group
        self._lock = threading.Lock()
        self.jobs: OrderedDict[int, dict] = OrderedDict()
        self.stages: OrderedDict[int, _Stage] = OrderedDict()

    def __call__(self, ev: dict) -> None:
        kind = ev["event"]
        if kind not in ("JobStart", "JobEnd", "StageStart", "StageEnd", "StageSkipped", "TaskStart", "TaskEnd"):
            return
        with self._lock:
            if kind == "JobStart":
                self.jobs[ev["job_id"]] = {"stages": [], "status": "RUNNING", "group": self._job_group()}
                _trim(self.jobs)
            elif kind == "JobEnd":
                job = self.jobs.get(ev["job_id"])
                if job is not None:
                    job["status"] = "SUCCEEDED" if ev.get("ok") else "FAILED"
            elif kind in ("StageStart", "StageSkipped", "StageEnd"):
                stage = self.stages.get(ev["stage_id"])
                if stage is None:
                    stage = self.stages[ev["stage_id"]] = _Stage(ev["stage_id"], ev.get("name", ""))
                    _trim(self.stages)
                job = self.jobs.get(ev.get("job_id"))
                if job is not None and ev["stage_id"] not in job["stages"]:
                    job["stages"].append(ev["stage_id"])
                if kind == "StageStart":
                    stage.attempt = ev.get("attempt", 1) - 1
                    stage.num_tasks = ev.get("num_tasks", 0)
                    stage.active = stage.completed = stage.failed = 0
                    stage.done = False
                else:
                    stage.done = True
            else:
                stage = self.stages.get(ev.get("stage_id"))
                if stage is None:
                    return
                if kind == "TaskStart":
                    stage.active += 1
                else:
                    if ev.get("task_id", 0) != -1:  # -1: a lost executor's task, never started here
                        stage.active = max(0, stage.active - 1)
                    if ev.get("ok"):
                        stage.completed += 1
                    else:
                        stage.failed += 1


def _trim(d: OrderedDict) -> None:
    while len(d) > _RETAINED:
        d.popitem(last=False)


class StatusTracker:
    """Read-only views of the jobs and stages of one SparkContext (PySpark's names)."""

    def __init__(self, listener: StatusListener) -> None:
        self._l = listener

    def getJobIdsForGroup(self, jobGroup: str | None = None) -> list[int]:
        """Ids of the retained jobs of ``jobGroup`` (None: jobs started with no group).

        >>> sc.setJobGroup("nightly", "two counts")
        >>> _ = sc.parallelize([1]).count(), sc.parallelize([2]).count()
        >>> len(sc.statusTracker().getJobIdsForGroup("nightly"))
        2
        >>> sc.setLocalProperty("spark.jobGroup.id", None)
        """
        with self._l._lock:
            return [j for j, info in self._l.jobs.items() if info["group"] == jobGroup]

    def getActiveJobsIds(self) -> list[int]:
        """Ids of the retained jobs still running (none once an action has returned).

        >>> _ = sc.parallelize([1, 2]).count()
        >>> sc.statusTracker().getActiveJobsIds()
        []
        """
        with self._l._lock:
            return [j for j, info in self._l.jobs.items() if info["status"] == "RUNNING"]

    def getActiveStageIds(self) -> list[int]:
        """Ids of the retained stages not yet ended (or skipped).

        >>> _ = sc.parallelize([("a", 1), ("a", 2)]).reduceByKey(lambda x, y: x + y).collect()
        >>> sc.statusTracker().getActiveStageIds()
        []
        """
        with self._l._lock:
            return [s for s, st in self._l.stages.items() if not st.done]

    def getJobInfo(self, jobId: int) -> SparkJobInfo | None:
        """A :class:`SparkJobInfo` of the job, or None when it is unknown (or no longer retained).

        >>> sc.setJobGroup("shuffle", "a job of two stages")
        >>> _ = sc.parallelize([("a", 1), ("b", 2)]).groupByKey().collect()
        >>> tracker = sc.statusTracker()
        >>> job = tracker.getJobInfo(tracker.getJobIdsForGroup("shuffle")[0])
        >>> job.status, len(job.stageIds)
        ('SUCCEEDED', 2)
        >>> tracker.getJobInfo(-1) is None
        True
        >>> sc.setLocalProperty("spark.jobGroup.id", None)
        """
        with self._l._lock:
            info = self._l.jobs.get(jobId)
            return None if info is None else SparkJobInfo(jobId, list(info["stages"]), info["status"])

    def getStageInfo(self, stageId: int) -> SparkStageInfo | None:
        """A :class:`SparkStageInfo` of the stage, or None when it is unknown (or no longer retained).

        >>> sc.setJobGroup("one-stage", "a job of one stage")
        >>> _ = sc.parallelize([1, 2], 2).count()
        >>> tracker = sc.statusTracker()
        >>> stage_id = tracker.getJobInfo(tracker.getJobIdsForGroup("one-stage")[0]).stageIds[0]
        >>> tracker.getStageInfo(stage_id).numTasks
        2
        >>> sc.setLocalProperty("spark.jobGroup.id", None)
        """
        with self._l._lock:
            st = self._l.stages.get(stageId)
            if st is None:
                return None
            return SparkStageInfo(st.stage_id, st.attempt, st.name, st.num_tasks, st.active, st.completed,
                                  st.failed)
