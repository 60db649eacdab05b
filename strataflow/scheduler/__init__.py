"""Lineage -> stages -> tasks, run on the context's thread pool."""

from .dag import DAGScheduler, JobError, Stage, TaskFailedError
from .task import TaskContext

__all__ = ["DAGScheduler", "JobError", "Stage", "TaskFailedError", "TaskContext"]
