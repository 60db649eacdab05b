"""A file's version (``io/file_version.py``), the input cache's key (issue 53): every way a
file can change moves it, locally and on S3 (moto's server on 127.0.0.1); a file the engine
cannot version says why. The clock a local file's age is taken against is injected: no
outcome rests on the wall clock."""

from __future__ import annotations

import os

import fsspec
import pytest

from moto_s3 import moto_s3
from strataflow.io.file_version import RACY_S, version_of
from strataflow.io.paths import FileRef


def ref(path) -> FileRef:
    return FileRef(str(path), os.path.getsize(path))


def later(path) -> float:
    """A clock reading past the racy window of the file's last change."""
    st = os.stat(path)
    return max(st.st_mtime_ns, st.st_ctime_ns) / 1e9 + RACY_S + 1


def version(path):
    v = version_of(ref(path), now=lambda: later(path))
    assert v.cacheable, v.reason
    return v.key


def write(path, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


@pytest.fixture
def csv(tmp_path):
    p = tmp_path / "points.csv"
    write(p, b"1,2\n3,4\n")
    return p


def test_an_unchanged_file_keeps_its_version(csv):
    assert version(csv) == version(csv)
    with open(csv, "rb") as fh:  # reading it changes nothing
        fh.read()
    assert version(csv) == version(csv)


@pytest.mark.parametrize("change", ["modified", "appended", "truncated", "renamed over", "same mtime put back",
                                    "deleted and written again"])
def test_every_change_moves_the_version(csv, tmp_path, change):
    before = version(csv)
    st = os.stat(csv)
    if change == "modified":  # same size, new bytes
        write(csv, b"1,2\n3,5\n")
    elif change == "appended":
        with open(csv, "ab") as fh:
            fh.write(b"5,6\n")
    elif change == "truncated":
        os.truncate(csv, 4)
    elif change == "renamed over":  # how editors and atomic writers replace a file
        other = tmp_path / "new.csv"
        write(other, b"1,2\n3,4\n")  # even the same bytes: another file
        os.replace(other, csv)
    elif change == "same mtime put back":  # rewritten within one tick, or `cp -p`, `touch -d`
        write(csv, b"9,9\n9,9\n")
        os.utime(csv, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert os.stat(csv).st_mtime_ns == st.st_mtime_ns and os.path.getsize(csv) == st.st_size
    else:
        os.remove(csv)
        write(csv, b"1,2\n3,4\n")
    assert version(csv) != before, change


def test_a_file_changed_within_the_racy_window_is_not_versioned(csv):
    st = os.stat(csv)
    changed = max(st.st_mtime_ns, st.st_ctime_ns) / 1e9
    young = version_of(ref(csv), now=lambda: changed + RACY_S / 4)
    assert not young.cacheable and young.key is None
    assert "changed 0.50 s ago" in young.reason and "timestamp granularity" in young.reason
    assert version_of(ref(csv), now=lambda: changed + RACY_S).cacheable


def test_a_file_that_is_gone_or_unreadable_is_not_versioned(csv, tmp_path):
    r = ref(csv)
    os.remove(csv)
    gone = version_of(r, now=lambda: 1e12)
    assert not gone.cacheable and gone.reason == f"{csv} does not exist"
    d = tmp_path / "locked"
    d.mkdir()
    write(d / "f.csv", b"1\n")
    inside = ref(d / "f.csv")
    os.chmod(d, 0)
    try:
        if os.access(d / "f.csv", os.F_OK):  # root reads through any mode: nothing to refuse
            assert version_of(inside, now=lambda: 1e12).cacheable
        else:
            v = version_of(inside, now=lambda: 1e12)
            assert not v.cacheable and "cannot be read" in v.reason
    finally:
        os.chmod(d, 0o755)


def test_a_memory_file_system_cannot_be_versioned():
    fs = fsspec.filesystem("memory")
    fs.pipe("/fv/a.csv", b"1,2\n")
    try:
        v = version_of(FileRef("/fv/a.csv", 4, fs))
        assert not v.cacheable
        assert "memory file system gives no ETag, version or modification time" in v.reason
    finally:
        fs.rm("/fv", recursive=True)


class OnlyTimes:
    """A file system whose files carry a modification time only (a web server's
    Last-Modified)."""

    protocol = "https"

    def unstrip_protocol(self, path):
        return f"https://{path}"

    def invalidate_cache(self, path=None):
        pass

    def info(self, path):
        return {"name": path, "size": 4, "type": "file", "Last-Modified": "Fri, 27 Nov 2026 10:00:00 GMT"}


def test_a_modification_time_alone_is_not_a_version():
    v = version_of(FileRef("example.org/a.csv", 4, OnlyTimes()))
    assert not v.cacheable and "only a modification time" in v.reason and "https://example.org/a.csv" in v.reason


@pytest.fixture(scope="module")
def s3():
    """A bucket on an S3 API served in this process on 127.0.0.1."""
    with moto_s3("fversion") as options:
        yield fsspec.filesystem("s3", skip_instance_cache=True, **options)


def s3_version(fs, path):
    v = version_of(FileRef(path, fs.info(path)["size"], fs))
    assert v.cacheable, v.reason
    return v.key


def test_every_change_moves_the_version_on_s3(s3):
    """Within one second (S3's LastModified is stamped to the second): the ETag moves."""
    path = f"fversion/k-{os.urandom(4).hex()}.csv"
    s3.pipe(path, b"1,2\n3,4\n")
    first = s3_version(s3, path)
    assert first == s3_version(s3, path)
    assert first[1] == f"s3://{path}" and any(k == "ETag" for k, _ in first[3])
    seen = [first]
    for body in (b"1,2\n3,5\n", b"1,2\n3,5\n5,6\n", b"1,2\n"):  # modified (same size), appended, truncated
        s3.pipe(path, body)
        now = s3_version(s3, path)
        assert now not in seen, body
        seen.append(now)
    s3.pipe(path + ".new", b"1,2\n3,4\n")  # replaced by renaming another object onto it
    s3.mv(path + ".new", path)
    assert s3_version(s3, path) != seen[-1]
    s3.rm(path)
    gone = version_of(FileRef(path, 0, s3))
    assert not gone.cacheable and gone.reason == f"s3://{path} does not exist"
