"""``bench scale --machine-memory``: a machine smaller than its data (issue 52, point 1).

The refusals (no cgroup file system, no memory controller, no permission, read-only) on
fake cgroup roots, at the module and on the command line; the v1 and v2 files read and
written, on fake trees. Where a real memory cgroup can be made here (root, a writable v1
or v2 hierarchy: :func:`machine.available` says, by making one), real runs: a child writing
three times the machine through the page cache stays within it, not killed; a child
allocating four times it is OOM-killed and its row says so; ``bench scale`` end to end,
every row within its machine. Where none can be made those tests assert the refusal
instead: every test asserts something real. Cgroups made here are named
``strataflow-test-*`` and removed. No timing assertions: bandwidths are only checked to
be positive, with the mode named.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sys

import pytest

from conftest import registered_policies
from strataflow.bench import device_bandwidth, machine, scale
from strataflow.bench.device_bandwidth import device_counters
from strataflow.cli import main as cli_main

MB = 1 << 20
CAN, WHY = machine.available()


def _said(capsys) -> str:
    """What the command line printed (stdout and stderr), its line wrapping undone."""
    got = capsys.readouterr()
    return " ".join((got.out + got.err).split())


def _assert_refusal(text: str) -> None:
    assert "--machine-memory" in text and "run as root" in text and machine.ROOT_ENV in text


# --- refusals -------------------------------------------------------------------------


def test_no_cgroup_file_system_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(machine.MachineUnavailable) as exc:
        machine.detect(str(tmp_path / "nothing"))
    assert "no cgroup file system at" in str(exc.value)
    _assert_refusal(str(exc.value))
    ok, why = machine.available(str(tmp_path / "nothing"))
    assert not ok and "no cgroup file system" in why


def test_no_memory_controller_is_refused_naming_what_was_found(tmp_path):
    with pytest.raises(machine.MachineUnavailable, match="no memory controller under") as exc:
        machine.detect(str(tmp_path))  # an empty directory: neither hierarchy
    _assert_refusal(str(exc.value))
    (tmp_path / "cgroup.controllers").write_text("cpu io pids\n")  # v2 without memory
    with pytest.raises(machine.MachineUnavailable, match="cgroup v2 at .* without the memory controller"):
        machine.detect(str(tmp_path))


def test_the_environment_names_the_root(tmp_path, monkeypatch):
    monkeypatch.setenv(machine.ROOT_ENV, str(tmp_path))
    assert machine.cgroup_root() == str(tmp_path)
    with pytest.raises(machine.MachineUnavailable, match=f"under {tmp_path}"):
        machine.Machine(64 * MB)
    monkeypatch.delenv(machine.ROOT_ENV)
    assert machine.cgroup_root() == "/sys/fs/cgroup"


@pytest.mark.parametrize("code, says", [(errno.EACCES, "no permission to make a cgroup under"),
                                        (errno.EPERM, "no permission to make a cgroup under"),
                                        (errno.EROFS, "the cgroup file system is read-only")])
def test_a_cgroup_that_cannot_be_made_is_refused_with_the_reason(tmp_path, monkeypatch, code, says):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "memory.limit_in_bytes").write_text("9223372036854771712\n")

    def refuse(path, *a, **kw):
        raise OSError(code, os.strerror(code), path)

    monkeypatch.setattr(machine.os, "mkdir", refuse)
    with pytest.raises(machine.MachineUnavailable) as exc:
        with machine.Machine(64 * MB, root=str(tmp_path), prefix="strataflow-test"):
            pass
    assert says in str(exc.value)
    _assert_refusal(str(exc.value))
    with pytest.raises(ValueError, match="> 0"):
        machine.Machine(0, root=str(tmp_path))


def test_the_command_line_refuses_without_a_cgroup(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(machine.ROOT_ENV, str(tmp_path / "no-cgroups"))
    code = cli_main(["bench", "scale", "--machine-memory", "2GB", "--budget", "4MB", "--sizes", "1", "--workloads",
                     "wordcount", "--repeat", "1", "--out", str(tmp_path / "out"), "--data-dir", str(tmp_path / "d")])
    said = _said(capsys)
    assert code == 2 and "no cgroup file system at" in said and "run as root" in said
    assert not os.listdir(tmp_path / "d")  # refused before any input was generated
    code = cli_main(["bench", "levels", "--machine-memory", "2GB", "--out", str(tmp_path / "out2")])
    assert code == 2 and "applies to bench scale and auto only" in _said(capsys)


@pytest.mark.parametrize("value, says", [("12XB", "'12XB' is not a machine size"),
                                         ("budget+lots", "'budget+lots' is not a machine size"),
                                         ("budget+0", "'budget+0' is zero bytes"), ("0", "'0' is zero bytes")])
def test_a_bad_machine_size_is_refused_naming_the_forms(tmp_path, capsys, value, says):
    with pytest.raises(SystemExit) as exc:
        cli_main(["bench", "auto", "--machine-memory", value, "--out", str(tmp_path / "out")])
    said = _said(capsys)
    assert exc.value.code == 2 and "argument --machine-memory: " + says in said and "budget+768MB" in said


# --- the hierarchies' files, on fake trees ---------------------------------------------


def test_v1_files_written_and_read(tmp_path):
    mem = tmp_path / "memory"
    mem.mkdir()
    (mem / "memory.limit_in_bytes").write_text("0")
    m = machine.Machine(96 * MB, root=str(tmp_path), prefix="strataflow-test")
    assert (m.version, m.parent) == ("v1", str(mem))
    m.__enter__()  # (a fake group is a directory with files: removed by hand below, not by close())
    try:
        assert open(os.path.join(m.path, "memory.limit_in_bytes")).read() == str(96 * MB)
        assert not os.path.exists(os.path.join(m.path, "memory.memsw.limit_in_bytes"))  # no swap accounting here
        with open(os.path.join(m.path, "memory.max_usage_in_bytes"), "w") as f:
            f.write(f"{90 * MB}\n")
        with open(os.path.join(m.path, "memory.oom_control"), "w") as f:
            f.write("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
        use = m.usage()
        assert (use.limit_bytes, use.peak_bytes, use.oom_kills, use.version) == (96 * MB, 90 * MB, 2, "v1")
        with open(os.path.join(m.path, "memory.oom_control"), "w") as f:  # an old kernel: no count, under_oom
            f.write("oom_kill_disable 0\nunder_oom 1\n")
        assert m.usage().oom_kills == 1
    finally:
        shutil.rmtree(m.path)


def test_v2_enables_the_controller_and_reads_peak_and_events(tmp_path):
    (tmp_path / "cgroup.controllers").write_text("cpu memory io\n")
    (tmp_path / "cgroup.subtree_control").write_text("cpu\n")
    m = machine.Machine(128 * MB, root=str(tmp_path), prefix="strataflow-test")
    assert (m.version, m.parent) == ("v2", str(tmp_path))
    m.__enter__()
    try:
        assert (tmp_path / "cgroup.subtree_control").read_text() == "+memory"
        assert open(os.path.join(m.path, "memory.max")).read() == str(128 * MB)
        with open(os.path.join(m.path, "memory.peak"), "w") as f:
            f.write(f"{100 * MB}\n")
        with open(os.path.join(m.path, "memory.events"), "w") as f:
            f.write("low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\n")
        use = m.usage()
        assert (use.peak_bytes, use.oom_kills, use.version, use.peak_source) == (100 * MB, 1, "v2", "memory.peak")
    finally:
        shutil.rmtree(m.path)


# --- real machines, where they can be made ----------------------------------------------

WRITER = """
import os, sys
path, size = sys.argv[1], int(sys.argv[2])
block = os.urandom(1 << 20)
with open(path, "wb") as f:  # through the page cache, no fsync
    for _ in range(size >> 20):
        f.write(block)
held = bytearray(48 << 20)  # anonymous memory below the limit, touched
for i in range(0, len(held), 4096):
    held[i] = 1
print("done", len(held))
"""


def test_a_machine_caps_the_page_cache_and_does_not_kill(tmp_path):
    if not CAN:
        _assert_refusal(WHY)
        return
    limit, size = 128 * MB, 384 * MB
    target = tmp_path / "written.bin"
    with machine.Machine(limit, prefix="strataflow-test") as m:
        proc = m.popen([sys.executable, "-c", WRITER, str(target), str(size)])
        assert proc.wait(timeout=300) == 0
        use = m.usage()
        assert not m.procs()
    assert not os.path.exists(m.path)  # removed
    assert target.stat().st_size == size  # three times the machine written, nothing lost
    assert use.oom_kills == 0 and use.limit_bytes == limit
    # within the machine, and the page cache counted in it (the process alone is ~60 MB)
    assert limit // 2 <= use.peak_bytes <= limit


def _hog_module(tmp_path, monkeypatch):
    (tmp_path / "sf_test_hog.py").write_text(
        "def hog(mb):\n    held = bytearray(mb << 20)\n    for i in range(0, len(held), 4096):\n        held[i] = 1\n"
        "    return {'held': len(held)}\n\ndef fail():\n    raise RuntimeError('broken on purpose')\n")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]))


def test_a_run_over_its_machine_is_oom_killed_and_its_row_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(scale, "BANDWIDTH_BYTES", 8 * MB)
    if not CAN:
        with pytest.raises(machine.MachineUnavailable) as exc:
            scale.machine_plan("128MB", str(tmp_path), str(tmp_path))
        _assert_refusal(str(exc.value))
        return
    _hog_module(tmp_path, monkeypatch)
    plan = scale.machine_plan("128MB", str(tmp_path), str(tmp_path), time_limit=300)
    assert plan["limit"] == 128 * MB and plan["columns"]["device_read_mb_s"] > 0
    data = tmp_path / "input.bin"
    data.write_bytes(b"x" * MB)
    key = {"experiment": "scale", "workload": "kmeans", "policy": "spark", "size_scale": 1.0, "repeat": 0}
    row = scale.in_machine(plan, "sf_test_hog:hog", {"mb": 512}, {**key, "input_gb": 0.001}, str(data),
                           str(tmp_path / "work"))
    assert row["finished"] == 0 and row["outcome"].startswith("OOM: ") and row["oom_kills"] >= 1
    assert "result_check" not in row  # a finding, not an error of the bench
    assert row["machine_memory_mb"] == 128 and row["peak_mb"] <= 128 and row["input_gb"] == 0.001
    assert os.path.exists(row["log"])  # its log is kept, named in the row
    # below its machine: the function's own result, with the machine's columns
    row = scale.in_machine(plan, "sf_test_hog:hog", {"mb": 32}, key, str(data), str(tmp_path / "work"))
    assert row["held"] == 32 * MB and row["oom_kills"] == 0 and "outcome" not in row and "log" not in row
    assert 32 <= row["peak_mb"] <= 128 and row["device_write_mb_s"] > 0
    # a run that fails for another reason is an error of the run
    row = scale.in_machine(plan, "sf_test_hog:fail", {}, key, str(data), str(tmp_path / "work"))
    assert row["result_check"].startswith("error: failed in the machine (exit status 1)")
    assert "broken on purpose" in open(row["log"]).read()
    assert not [n for n in os.listdir(machine.detect()[1]) if n.startswith(f"strataflow-{os.getpid()}-")]


def test_a_process_leaves_its_machine_and_what_it_does_next_is_not_charged_to_it(tmp_path, monkeypatch):
    """The result check's escape: inside a 128 MB machine a process leaves it and then
    holds 256 MB (twice the machine) without being killed; outside any machine leaving is
    a no-op that says so."""
    monkeypatch.delenv(machine.EXIT_ENV, raising=False)
    assert machine.leave_machine() is False and machine.checks_outside() is None
    if not CAN:
        assert machine.can_leave() is False
        return
    assert machine.can_leave() is True
    _hog_module(tmp_path, monkeypatch)
    (tmp_path / "sf_test_leave.py").write_text(
        "from strataflow.bench.machine import checks_outside\nfrom sf_test_hog import hog\n"
        "def held_outside(mb):\n    with checks_outside()('a check'):\n        return hog(mb)\n")
    plan = {"limit": 128 * MB, "headroom": None, "columns": {}, "note": "test"}
    key = {"experiment": "scale", "workload": "kmeans", "policy": "spark", "size_scale": 1.0, "repeat": 0}
    data = tmp_path / "input.bin"
    data.write_bytes(b"x")
    row = scale.in_machine(plan, "sf_test_leave:held_outside", {"mb": 256}, key, str(data), str(tmp_path / "w"))
    assert row["held"] == 256 * MB and row["oom_kills"] == 0 and row["peak_mb"] <= 128
    row = scale.in_machine(plan, "sf_test_hog:hog", {"mb": 256}, key, str(data), str(tmp_path / "w"))
    assert row["oom_kills"] >= 1  # the same work without leaving: killed


def _bench_in_machine(tmp_path, capsys, experiment: str, *args: str) -> dict | None:
    """``strataflow bench EXPERIMENT ARGS`` (threads backend, one repeat) into tmp_path/out:
    its results, or None where no machine can be made here (after checking the refusal)."""
    out = tmp_path / "out"
    code = cli_main(["bench", experiment, *args, "--backend", "threads", "--repeat", "1", "--out", str(out),
                     "--data-dir", str(tmp_path / "data")])
    if not CAN:
        assert code == 2
        _assert_refusal(_said(capsys))
        return None
    assert code == 0
    return json.loads((out / "results.json").read_text())


def test_bench_scale_runs_in_a_machine_end_to_end(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(scale, "BANDWIDTH_BYTES", 16 * MB)
    monkeypatch.setattr(scale, "disk_free", lambda path: 1 << 40)
    out = tmp_path / "out"
    res = _bench_in_machine(tmp_path, capsys, "scale", "--machine-memory", "512MB", "--budget", "4MB", "--sizes", "1,4",
                            "--policies", registered_policies()[0], "--workloads", "wordcount", "--warmup", "0")
    if res is None:
        return
    rows = [r for r in res["runs"] if r.get("experiment") == "scale"]
    assert [r["size_scale"] for r in rows] == [1.0, 4.0]
    for r in rows:
        assert r["finished"] == 1 and r["result_check"] == "ok" and r["checked"] == 1 and r["oom_kills"] == 0
        assert r["machine_memory_mb"] == 512 and 0 < r["peak_mb"] <= 512
        assert r["device_read_mb_s"] > 0 and r["device_write_mb_s"] > 0
        # what reached the device during the run (absent only where the work dir is on no block device)
        dev = device_counters(str(tmp_path))
        assert (dev is None) == ("device_read_gb" not in r)
        assert dev is None or (r["device_read_gb"] >= 0 and r["device_written_gb"] >= 0)
    table = (out / "table.md").read_text()
    for col in ("machine_memory_mb", "peak_mb", "oom_kills", "device_read_mb_s", "device_write_mb_s"):
        assert f"| {col} |" in table
    assert any(n.startswith("machine: every run in a fresh memory cgroup of 512 MB") and "MB/s read" in n
               and "results checked (up to 1.0 GB of input) after the driver leaves its machine" in n
               for n in res["meta"]["notes"])


def test_bench_auto_runs_each_run_in_a_machine_of_its_budget_plus_headroom(tmp_path, monkeypatch, capsys):
    """bench auto --machine-memory budget+SIZE: every run (AUTO and the fixed levels) in a
    fresh machine of its own budget plus SIZE; rows keep their checks and gain the
    machine's columns; no warm-up runs (each starts in a fresh machine)."""
    monkeypatch.setattr(scale, "BANDWIDTH_BYTES", 16 * MB)
    res = _bench_in_machine(tmp_path, capsys, "auto", "--machine-memory", "budget+512MB", "--scale", "0.002",
                            "--workloads", "kmeans", "--pressures", "4", "--levels", "MEMORY_AND_DISK")
    if res is None:
        return
    rows = [r for r in res["runs"] if r.get("experiment") == "auto"]
    assert sorted(r["level"] for r in rows) == ["AUTO", "MEMORY_AND_DISK"]
    for r in rows:
        assert r["result_check"] == "ok" and r["oom_kills"] == 0 and r["total_s"] > 0
        assert r["machine_memory_mb"] == pytest.approx(r["memory_mb"] + 512, abs=1 / MB)
        assert 0 < r["peak_mb"] <= r["machine_memory_mb"] and r["device_read_mb_s"] > 0
    assert any("memory cgroup of its memory budget + 512 MB" in n for n in res["meta"]["notes"])


# --- the device's bandwidth, and dropping pages -----------------------------------------


def test_direct_bandwidth_measures_both_ways_and_names_its_mode(tmp_path):
    bw = device_bandwidth.direct_bandwidth(str(tmp_path), 32 * MB)
    assert bw["bytes"] == 32 * MB and bw["block"] == MB
    assert bw["write_mb_per_s"] > 0 and bw["read_mb_per_s"] > 0
    assert bw["mode"] in ("O_DIRECT", "fadvise") and bw["fs"] != "" and bw["note"]
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".strataflow-direct-")]  # removed
    with pytest.raises(ValueError, match="multiple of"):
        device_bandwidth.direct_bandwidth(str(tmp_path), MB, block=1000)
    with pytest.raises(FileNotFoundError):
        device_bandwidth.direct_bandwidth(str(tmp_path / "missing"), MB)


def test_where_o_direct_is_refused_the_page_cache_path_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(device_bandwidth, "_open_direct", lambda path, flags: None)
    bw = device_bandwidth.direct_bandwidth(str(tmp_path), 3 * MB + 1)  # rounded up to whole blocks
    assert bw["mode"] == "fadvise" and "O_DIRECT refused" in bw["note"] and bw["bytes"] == 4 * MB
    assert bw["read_mb_per_s"] > 0 and bw["write_mb_per_s"] > 0
    assert device_bandwidth.fs_type("/proc") == "proc"


def test_device_counters_read_the_kernels_sectors_for_the_paths_device(tmp_path):
    dev = os.stat(tmp_path).st_dev
    major, minor = os.major(dev), os.minor(dev)
    fake = tmp_path / "diskstats"
    fake.write_text(f"   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0\n"
                    f" {major} {minor} sdz 10 0 2048 5 20 0 4096 9 0 14 14\n")
    got = device_counters(str(tmp_path), str(fake))
    if major == 0:  # tmp_path on no block device (tmpfs, overlay): nothing the kernel counts
        assert got is None
    else:
        assert got == (2048 * 512, 4096 * 512)  # 512-byte sectors, whatever the device's own
        fake.write_text("   7       0 loop0 1 0 8 0 0 0 0 0 0 0 0\n")
        assert device_counters(str(tmp_path), str(fake)) is None  # its device not listed
    assert device_counters(str(tmp_path), str(tmp_path / "missing")) is None
    real = device_counters(str(tmp_path))
    assert real is None or (real[0] >= 0 and real[1] >= 0)


def test_cache_rates_and_their_shares_of_the_device():
    m = {"disk_bytes_read": 500 * MB, "disk_bytes_written": 300 * MB, "disk_write_s": 2.0}
    rates = scale.cache_rates(m, [2.0, 1.0, 1.0, 3.0, 1.0])  # median iteration 1 s, 5 iterations
    assert rates == {"iteration_read_mb_s": 100.0, "cache_write_mb_s": 150.0}
    row = {**rates, "device_read_mb_s": 200.0, "device_write_mb_s": 200.0}
    assert scale.device_shares(row) == {"read_share": 0.5, "write_share": 0.75}
    # nothing read, nothing timed, no iterations, no device figure: no rate, no share
    assert scale.cache_rates({"disk_bytes_written": 5, "disk_write_s": 0}, []) == {
        "iteration_read_mb_s": None, "cache_write_mb_s": None}
    assert scale.device_shares({"iteration_read_mb_s": 100.0}) == {}


def test_drop_page_cache_covers_a_file_or_a_tree(tmp_path):
    (tmp_path / "a").write_bytes(b"1" * 5000)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b").write_bytes(b"2" * 3000)
    assert machine.drop_page_cache(str(tmp_path)) == 8000
    assert machine.drop_page_cache(str(tmp_path / "a")) == 5000


def test_the_device_reads_profile_runs_every_variant_in_a_machine(tmp_path, capsys):
    """benchmarks/device_reads.py (issue 52's profile): every variant reads every block
    back, inside a machine; where none can be made it stops with the reason."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
    try:
        import device_reads
    finally:
        sys.path.pop(0)
    argv = ["--machine-memory", "256MB", "--blocks", "3", "--block-mb", "4", "--repeat", "2", "--dir", str(tmp_path),
            "--bandwidth-mb", "8", "--out", str(tmp_path / "reads.json")]
    if not CAN:
        with pytest.raises(machine.MachineUnavailable):
            device_reads.main(argv)
        return
    assert device_reads.main(argv) == 0
    doc = json.loads((tmp_path / "reads.json").read_text())
    assert set(doc["mb_per_s"]) == set(device_reads.VARIANTS)
    assert all(len(v) == 2 and min(v) > 0 for v in doc["mb_per_s"].values())
    assert doc["machine"]["oom_kills"] == 0 and doc["device"]["read_mb_per_s"] > 0
    assert "the O_DIRECT read" in capsys.readouterr().err
