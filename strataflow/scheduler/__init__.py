"""Lineage -> stages -> tasks, run on the context's thread pool."""

from .dag import ContextStopped, DAGScheduler, JobError, Stage, TaskFailedError
from .task import TaskContext

__all__ = ["ContextStopped", "DAGScheduler", "JobError", "Stage", "TaskFailedError", "TaskContext"]
