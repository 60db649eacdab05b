"""``pipe``: each partition's records through an external command, a line each way.

The command runs once per partition, where the partition is computed. Records go to its
standard input as ``str(record)`` lines from a separate thread (so a command that writes
before it has read everything cannot deadlock against us), and each line of its standard
output, without its newline, is a record of the result.
"""

from __future__ import annotations

import shlex
import subprocess
import threading
from typing import TYPE_CHECKING, Mapping, Sequence

from strataflow.common.batch import iter_rows
from strataflow.lineage import MapPartitionsNode

if TYPE_CHECKING:
    from strataflow.dataset import Dataset

__all__ = ["PipeOps"]


class PipeOps:
    """``pipe``, a mixin of Dataset."""

    def pipe(self, command: str | Sequence[str], env: Mapping[str, str] | None = None,
             check_code: bool = False) -> "Dataset":
        """The output lines of ``command`` (a string split as a shell would, or an argv
        list; no shell runs) fed each partition's records. ``env`` replaces the
        environment (None: inherited). With ``check_code``, a non-zero exit fails the task
        with an error naming the command and its status.

        >>> ctx.parallelize(["b", "a"], 1).pipe("sort").collect()
        ['a', 'b']
        """
        argv = shlex.split(command) if isinstance(command, str) else list(command)
        if not argv:
            raise ValueError("pipe: the command is empty")
        env = None if env is None else dict(env)

        def run(_, v):
            proc = subprocess.Popen(argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            failure: list = []

            def feed():
                try:
                    for x in iter_rows(v):
                        proc.stdin.write((str(x).rstrip("\n") + "\n").encode("utf-8"))
                except BrokenPipeError:
                    pass  # the command stopped reading: its output is still the answer
                except BaseException as exc:  # noqa: BLE001 - reported on the task's thread
                    failure.append(exc)
                finally:
                    try:
                        proc.stdin.close()
                    except BrokenPipeError:
                        pass

            writer = threading.Thread(target=feed, name="strataflow-pipe-writer", daemon=True)
            writer.start()
            out = [line.decode("utf-8").rstrip("\n") for line in proc.stdout]
            proc.stdout.close()
            writer.join()
            code = proc.wait()
            if failure:
                raise failure[0]
            if check_code and code:
                raise RuntimeError(f"pipe: command {argv!r} exited with status {code}")
            return out

        return self._derive(MapPartitionsNode(self, run), "pipe")
