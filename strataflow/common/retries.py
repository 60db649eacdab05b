"""Which failed tasks run again, and how many times.

A task fails for one of three kinds of reason, told apart by the exception's ``retryable``
attribute (a class attribute, or one set on the instance where the engine raised it):

- ``retryable = True``: the infrastructure failed under the task (its executor was lost,
  the shuffle device was full or refused a write, a spill file was damaged, a peer's
  block went away). Another attempt, perhaps elsewhere, may well succeed: such a task
  runs up to ``max_task_attempts`` times (default 4).
- ``retryable = False``: the engine knows another attempt would fail the same way (input
  that is not UTF-8, a source slice no one can send, a destroyed broadcast): one attempt.
- no ``retryable`` attribute: the user's code raised it. Deterministic more often than
  not (a bad record, a typo), so in local mode it is not retried, as PySpark's
  ``local[N]`` runs with ``spark.task.maxFailures=1``: the user sees the error at once,
  not after four identical attempts. ``task_max_failures`` (``spark.task.maxFailures``,
  ``local[N, F]``) sets the attempts; on a Ray cluster (``address=`` given) the default
  is ``max_task_attempts``, as a Spark cluster's is 4, since a node may fail a task for
  reasons of its own.

Fetch failures (a shuffle output that cannot be read) are none of these: the map stage
reruns, up to ``max_stage_attempts`` times.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["infrastructure_fault", "attempts_allowed", "is_user_error", "default_task_max_failures"]

E = TypeVar("E", bound=BaseException)


def infrastructure_fault(exc: E) -> E:
    """Marks ``exc`` (say, the ``OSError`` of a full shuffle device) as the infrastructure's
    fault, so its task is retried up to ``max_task_attempts`` times; returns it."""
    try:
        exc.retryable = True  # type: ignore[attr-defined]
    except AttributeError:  # an exception type without a __dict__: it stays a user error
        pass
    return exc


def is_user_error(exc: BaseException) -> bool:
    """Whether ``exc`` came from the user's code (the engine did not classify it)."""
    return getattr(exc, "retryable", None) is None


def attempts_allowed(exc: BaseException, max_task_attempts: int, task_max_failures: int) -> int:
    """How many attempts a task that failed with ``exc`` may have in all."""
    retryable = getattr(exc, "retryable", None)
    if retryable is None:
        return task_max_failures
    return max_task_attempts if retryable else 1


def default_task_max_failures(address: str | None, max_task_attempts: int) -> int:
    """Attempts of a task whose user code fails, when ``task_max_failures`` is not given:
    one in local mode (threads, processes, a Ray instance of this machine), as PySpark's
    ``local[N]``; ``max_task_attempts`` on a cluster, which an ``address`` names (only a
    backend that takes one is given one: ``Config`` checks)."""
    if address is not None:
        return max_task_attempts
    return 1
