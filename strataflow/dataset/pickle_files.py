"""Pickle files, written: ``save_as_pickle_file`` (the format and its reader are in
:mod:`strataflow.io.pickle_files`)."""

from __future__ import annotations

import os
import pickle

from strataflow.common.batch import iter_rows

__all__ = ["PickleFileOps"]


class PickleFileOps:
    """``save_as_pickle_file``, a mixin of Dataset."""

    def save_as_pickle_file(self, path: str | os.PathLike, batch_size: int = 10) -> None:
        """Writes the records as pickles (``Context.pickle_file`` reads them back), in
        lists of ``batch_size`` records (0 or less: one list per partition).

        Loading a pickle file runs code from it, so write them where no one else can
        write, and read back only files you trust (``io/pickle_files.py``'s warning).

        >>> ctx.parallelize([{"a": 1}, None]).save_as_pickle_file(tmp_dir + "/records")
        >>> ctx.pickle_file(tmp_dir + "/records").collect()
        [{'a': 1}, None]
        """
        out = self._output_dir(path, "save_as_pickle_file")

        def write(i, v):
            def dump(f):
                batch: list = []
                for x in iter_rows(v):
                    batch.append(x)
                    if 0 < batch_size <= len(batch):
                        pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)
                        batch = []
                if batch:
                    pickle.dump(batch, f, protocol=pickle.HIGHEST_PROTOCOL)

            with out.atomic_file(f"part-{i:05d}") as f:
                dump(f)
            return [1]

        self.map_partitions_with_index(write)._run(len, description=f"save_as_pickle_file {self.label}")
        out.touch("_SUCCESS")
