"""``common/npy_headers.py``: every ``.npy`` header in the process parsed under one lock
(CPython 3.11's AST constructor is not safe for two threads at once: a threads-backend
shuffle failed with "AST constructor recursion depth mismatch"), and the arrays read the
same as numpy's own reader gives them."""

from __future__ import annotations

import ast
import datetime as dt
import io
import threading

import numpy as np
import pytest

from strataflow.common import npy_headers


def _image(a: np.ndarray, version: tuple[int, int] | None = None) -> bytes:
    buf = io.BytesIO()
    np.lib.format.write_array(buf, a, version=version, allow_pickle=True)
    return buf.getvalue()


ARRAYS = [
    np.arange(12, dtype=np.int64).reshape(3, 4),
    np.asfortranarray(np.arange(24, dtype=np.float32).reshape(2, 3, 4)),
    np.array(3.5),  # 0-d
    np.zeros((0, 5), dtype=np.int16),  # empty
    np.array([np.nan, -0.0, np.inf]),
    np.array(["é", "日本", ""], dtype="U3"),
    np.array([dt.date(2026, 11, 27), dt.date(1970, 1, 1)], dtype="datetime64[D]"),
    np.array([(1, 2.5), (3, -1.0)], dtype=[("k", "<i4"), ("v", "<f8")]),
]


@pytest.mark.parametrize("a", ARRAYS, ids=lambda a: f"{a.dtype}-{a.shape}")
@pytest.mark.parametrize("version", [None, (2, 0)])
def test_an_image_reads_as_numpys_reader_reads_it(a, version):
    image = _image(a, version)
    got = npy_headers.read_array(memoryview(image))
    want = np.lib.format.read_array(io.BytesIO(image))
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)
    assert got.flags.writeable and got.flags.owndata or got.base is not None and got.base.flags.owndata
    assert got.flags.f_contiguous == want.flags.f_contiguous


def test_objects_load_only_where_allowed():
    image = _image(np.array([{"a": 1}, None, "x"], dtype=object))
    with pytest.raises(ValueError, match="allow_pickle=False"):
        npy_headers.read_array(image)
    assert list(npy_headers.read_array(image, allow_pickle=True)) == [{"a": 1}, None, "x"]


def test_a_file_loads_read_or_mapped_and_a_truncated_one_is_named(tmp_path):
    a = np.arange(1000, dtype=np.float64).reshape(100, 10)
    path = tmp_path / "a.npy"
    np.save(path, a)
    np.testing.assert_array_equal(npy_headers.load(str(path)), a)
    mapped = npy_headers.load(str(path), mmap_mode="r")
    assert isinstance(mapped, np.memmap) and not mapped.flags.writeable
    np.testing.assert_array_equal(mapped, a)
    path.write_bytes(path.read_bytes()[:-80])
    with pytest.raises(ValueError, match="a.npy: the file holds 990 of the header's 1000 values"):
        npy_headers.load(str(path))


def test_every_header_parse_holds_the_process_lock(monkeypatch, tmp_path):
    """The lock is the fix: each way in (bucket images, files read or mapped, the mapped
    layout's descriptors) parses with it held."""
    held = []
    real = ast.literal_eval

    def spying(text):
        held.append(npy_headers.LOCK.locked())
        return real(text)

    monkeypatch.setattr(ast, "literal_eval", spying)
    a = np.arange(6).reshape(2, 3)
    np.save(tmp_path / "a.npy", a)
    npy_headers.read_array(_image(a))
    npy_headers.load(str(tmp_path / "a.npy"))
    npy_headers.load(str(tmp_path / "a.npy"), mmap_mode="r")
    npy_headers.literal_eval("{'a': 1}")
    assert len(held) == 4 and all(held)


def test_threads_decoding_at_once_all_get_their_arrays():
    images = [_image(np.full((50, 7), i, dtype=np.int32)) for i in range(16)]
    errors: list[BaseException] = []
    done: list[int] = []

    def work():
        try:
            for _ in range(200):
                for i, image in enumerate(images):
                    assert int(npy_headers.read_array(image)[0, 0]) == i
            done.append(1)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(done) == 4
