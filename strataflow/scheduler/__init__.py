"""Lineage -> stages -> tasks, run on the context's thread pool."""

from strataflow.scheduler.dag import ContextStopped, DAGScheduler, JobError, Stage, TaskFailedError
from strataflow.executor.task import TaskContext

__all__ = ["ContextStopped", "DAGScheduler", "JobError", "Stage", "TaskFailedError", "TaskContext"]
