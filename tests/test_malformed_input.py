"""Malformed input is an error, never lost rows (issue 50, point 2).

One unterminated quote used to swallow the rest of its partition's byte range into one
field: the row count depended on ``num_partitions`` and nothing failed. Now every CSV line
is one record, good or malformed on its own: ``FAILFAST`` (the default) names the file and
the line's number in the file, ``DROPMALFORMED`` leaves exactly the malformed lines out and
counts them, ``PERMISSIVE`` keeps them as rows with nulls and the line's text: the same
answer for every ``num_partitions``, wherever the bad line falls. Special files are
refused by name by every reader."""

from __future__ import annotations

import os
import socket

import pyarrow as pa
import pytest

from strataflow import ConfigError, Context, TaskFailedError
from strataflow.io import csv_lines
from strataflow.io.csv_lines import describe_error, quote_left_open
from strataflow.io.delimited import CsvSource
from strataflow.io.paths import SpecialFileError
from strataflow.io.sources import MalformedInputError

TYPES = {"id": pa.int64(), "name": pa.string(), "score": pa.float64(), "note": pa.string()}

# good lines of every kind a reader gets wrong: unicode, empty fields, quoted commas and
# quotes, a huge float, -0.0, leading spaces kept; {i} is the row's id
GOOD = [
    ("{i},plain,1.5,x", ("plain", 1.5, "x")),
    ('{i},"comma, inside",2.5,"say ""hi"""', ("comma, inside", 2.5, 'say "hi"')),
    ("{i},ünïcödé 漢字 🙂,,", ("ünïcödé 漢字 🙂", None, "")),
    ("{i},,-0.0,", ("", -0.0, "")),
    ('{i},"",1e300,"  spaced  "', ("", 1e300, "  spaced  ")),
]

# malformed lines: what each is, as bytes ({i}: the id)
BAD = {
    "quote left open": b'{i},"name {i},1.5,x',
    "quote left open in the last column": b'{i},name,1.5,"note {i}',  # the swallow: field count right
    "too many fields": b"{i},name,1.5,x,extra",
    "too few fields": b"{i},name",
    "not a number": b"{i},name,many,x",
    "not UTF-8": b"{i},caf\xe9,1.5,x",
}


def _lines(rows: int) -> tuple[list[bytes], list[tuple]]:
    lines, want = [], []
    for i in range(rows):
        text, values = GOOD[i % len(GOOD)]
        lines.append(text.format(i=i).encode())
        want.append((i, *values))
    return lines, want


def _write(path, lines: list[bytes], final_newline: bool = True) -> None:
    """Header, then the lines, ending alternately \\n and \\r\\n."""
    body = b"".join(ln + (b"\r\n" if k % 2 else b"\n") for k, ln in enumerate(lines))
    path.write_bytes(b"id,name,score,note\n" + (body if final_newline else body.rstrip(b"\r\n")))


def _read(path, n: int, mode: str) -> pa.Table:
    """Every split of a csv_file source, read in order, as one table (no Context: the
    sweep reads thousands of small inputs)."""
    source = CsvSource(str(path), n, column_types=TYPES, header=True, mode=mode,
                       column_names=None)
    tables = [source.compute(s, None) for s in range(source.num_partitions)]
    return pa.concat_tables(tables) if tables else source.schema.empty_table()


def _rows(table: pa.Table) -> list[tuple]:
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(zip(*cols))


# -- a bad line wherever it falls ------------------------------------------------------------------
@pytest.mark.parametrize("kind", list(BAD))
def test_a_bad_line_anywhere_gives_the_same_answer_for_every_partitioning(kind, tmp_path):
    """A bad line at each of 24 positions read with 7 partitions (so it is in turn the first,
    a middle and the last line of every partition), and at the first, a middle and the
    last with 1 and 3: FAILFAST names the line in the file; DROPMALFORMED gives every other
    row; PERMISSIVE every row, the bad one with its text. On main an open quote swallowed
    the lines after it (how many: by partition count) or the error said pyarrow's
    ``Row #``, counted in the range."""
    rows = 24
    lines, want = _lines(rows)
    path = tmp_path / "in.csv"
    for pos in range(rows):
        bad = lines[:pos] + [BAD[kind].replace(b"{i}", str(pos).encode())] + lines[pos + 1:]
        _write(path, bad)
        kept = want[:pos] + want[pos + 1:]
        for n in (7, 1, 3) if pos in (0, rows // 2, rows - 1) else (7,):
            with pytest.raises(MalformedInputError) as info:
                _read(path, n, "FAILFAST")
            assert (info.value.line, info.value.path) == (pos + 2, str(path)), (kind, pos, n)
            assert f"at line {pos + 2}:" in str(info.value)
            assert _rows(_read(path, n, "DROPMALFORMED")) == kept, (kind, pos, n)
            got = _rows(_read(path, n, "PERMISSIVE"))
            assert len(got) == rows and [r[:4] for r in got[:pos] + got[pos + 1:]] == kept, (kind, pos, n)
            assert [r[4] for r in got] == [None] * pos + [bad[pos].decode("utf-8", "replace")] + \
                [None] * (rows - pos - 1)


def test_many_bad_lines_of_every_kind_in_one_range(tmp_path):
    """Every third line malformed, the kinds in turn, in ranges of 1,500 and ~380 lines: the
    slow path sets each apart (a field that does not convert is named by its row, its line
    blanked, the block parsed again) and keeps every good line, in order."""
    rows = 1500
    lines, want = _lines(rows)
    kinds = list(BAD.values())
    for pos in range(1, rows, 3):
        lines[pos] = kinds[pos % len(kinds)].replace(b"{i}", str(pos).encode())
    path = tmp_path / "in.csv"
    _write(path, lines)
    kept = [w for k, w in enumerate(want) if k % 3 != 1]
    for n in (1, 4):
        assert _rows(_read(path, n, "DROPMALFORMED")) == kept
        got = _rows(_read(path, n, "PERMISSIVE"))
        assert [r[4] is not None for r in got] == [k % 3 == 1 for k in range(rows)]
        with pytest.raises(MalformedInputError) as info:
            _read(path, n, "FAILFAST")
        assert info.value.line == 3  # the first bad line, whichever kind is found first


def test_a_carriage_return_inside_a_line_takes_the_exact_slow_path(tmp_path):
    """pyarrow reads a lone \\r as a line break, so rows are not lines: the range is sorted
    by parsing pieces (``_bisect``), which gives the same rows as a clean parse."""
    path = tmp_path / "in.csv"
    lines, want = _lines(30)
    lines[4] = b"4,a\rb,1.5,x"  # two rows for pyarrow, each of the wrong width
    lines[20] = b'20,"open,1.5,x'
    _write(path, lines)
    got = _rows(_read(path, 2, "DROPMALFORMED"))
    assert got == want[:4] + want[5:20] + want[21:]


def test_the_reason_is_the_lines_own(tmp_path):
    path = tmp_path / "in.csv"
    lines, _ = _lines(4)
    expected = {
        "quote left open": "a quoted field is not closed on its line",
        "quote left open in the last column": "a quoted field is not closed on its line",
        "too many fields": "expected 4 fields, got 5",
        "too few fields": "expected 4 fields, got 2",
        "not a number": "column 'score': invalid value 'many' (not a double)",
        "not UTF-8": "column 'name': bytes that are not UTF-8",
    }
    for kind, reason in expected.items():
        _write(path, lines[:2] + [BAD[kind].replace(b"{i}", b"2")] + lines[3:])
        with pytest.raises(MalformedInputError, match="cannot be parsed at line 4: " + reason.replace("(", r"\(")
                           .replace(")", r"\)")) as info:
            _read(path, 2, "FAILFAST")
        assert "Row #" not in str(info.value) and info.value.reason.startswith(reason)


def test_permissive_keeps_the_fields_that_convert(tmp_path):
    path = tmp_path / "in.csv"
    lines, _ = _lines(1)
    _write(path, lines + [b"1,name", b"2,name,1.5,x,extra", b"3,name,many,x", b"4,caf\xe9,2.5,y"])
    got = _rows(_read(path, 2, "PERMISSIVE"))
    assert got[1:] == [(1, "name", None, None, "1,name"),  # missing fields null
                       (2, "name", 1.5, "x", "2,name,1.5,x,extra"),  # extra ones dropped
                       (3, "name", None, "x", "3,name,many,x"),  # the field that does not convert null
                       (4, None, 2.5, "y", "4,caf\ufffd,2.5,y")]  # undecodable: null, text with U+FFFD
    source = CsvSource(str(path), 2, column_types=TYPES, header=True, mode="permissive",
                       corrupt_record_column=None)
    assert source.schema.names == list(TYPES)  # no corrupt record column asked for


def test_an_open_quote_on_the_last_line_with_no_newline_after_it(tmp_path):
    """pyarrow reads ``5,"x`` at the very end of a file as the value ``x``: no newline in it
    to give it away."""
    path = tmp_path / "in.csv"
    lines, want = _lines(6)
    _write(path, lines[:5] + [b'5,name,1.5,"note'], final_newline=False)
    for n in (1, 2, 5):
        with pytest.raises(MalformedInputError) as info:
            _read(path, n, "FAILFAST")
        assert info.value.line == 7
        assert _rows(_read(path, n, "DROPMALFORMED")) == want[:5]
    _write(path, lines, final_newline=False)  # a good last line with no newline is fine
    assert _rows(_read(path, 3, "FAILFAST")) == want


def test_good_input_of_every_kind_reads_the_same_whatever_the_cut(tmp_path):
    """Unicode, empty fields, quoted commas and quotes, CRLF, -0.0: every mode gives every
    row, for every partition count; a header-only file and an empty file give none."""
    path = tmp_path / "in.csv"
    lines, want = _lines(40)
    _write(path, lines)
    for n in (1, 2, 5, 13, 40):
        for mode in ("FAILFAST", "DROPMALFORMED"):
            assert _rows(_read(path, n, mode)) == want
        assert _rows(_read(path, n, "PERMISSIVE")) == [(*r, None) for r in want]
    (tmp_path / "header.csv").write_text("id,name,score,note\n")
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "blank.csv").write_text("id,name,score,note\n\n\r\n\n")
    for name in ("header.csv", "blank.csv"):
        for mode in ("FAILFAST", "DROPMALFORMED", "PERMISSIVE"):
            assert _read(tmp_path / name, 3, mode).num_rows == 0
    empty = CsvSource(str(tmp_path / "empty.csv"), 3, column_names=["a"], mode="FAILFAST")
    assert [empty.compute(s, None).num_rows for s in range(empty.num_partitions)] == [0]


def test_a_quoted_newline_is_refused_naming_its_line(tmp_path):
    """RFC 4180 allows a newline inside quotes; a reader that cuts at newlines cannot read
    one the same way for every cut, so it is a malformed line (the first of the two), not
    a row that exists for some partition counts only."""
    path = tmp_path / "in.csv"
    path.write_text('id,name,score,note\n0,a,1.0,x\n1,"two\nlines",2.0,y\n2,b,3.0,z\n')
    for n in (1, 2, 4):
        with pytest.raises(MalformedInputError, match=r"at line 3: a quoted field is not closed on its line"):
            _read(path, n, "FAILFAST")
        assert _rows(_read(path, n, "DROPMALFORMED")) == [(0, "a", 1.0, "x"), (2, "b", 3.0, "z")]


def test_the_schema_pass_reads_good_lines_only_or_fails_naming_the_line(local_ctx, tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("a,b\n" + "".join(f"{i},{i}\n" for i in range(50)) + '50,"7\n' +
                    "".join(f"{i},{i}\n" for i in range(51, 100)))
    for n in (1, 3):
        with pytest.raises(MalformedInputError, match=r"in\.csv' cannot be parsed at line 52"):
            local_ctx.csv_file(path, n, header=True)
        ds = local_ctx.csv_file(path, n, header=True, mode="DROPMALFORMED")
        assert ds.to_arrow().schema == pa.schema([("a", pa.int64()), ("b", pa.int64())])
        assert ds.count() == 99 and local_ctx.malformed_rows(ds) == 1


# -- through a Context, on every backend ------------------------------------------------------------
def test_the_issue_file_on_every_backend(ctx, tmp_path):
    """The issue's case, smaller: one unterminated quote in a string column, header=True.
    The error crosses the executor's process with its file and line; the dropped line is
    counted once however often the data is read."""
    path = tmp_path / "in.csv"
    with open(path, "w") as f:
        f.write("id,v,name\n")
        for i in range(1, 3001):
            f.write(f'{i},{i * 0.5},"name {i}\n' if i == 1234 else f"{i},{i * 0.5},name {i}\n")
    for n in (1, 2, 4, 7):
        with pytest.raises(TaskFailedError) as info:
            ctx.csv_file(path, n, header=True).count()
        assert isinstance(info.value, MalformedInputError) and info.value.attempts == 1
        assert (info.value.path, info.value.line) == (str(path), 1235)
        dropped = ctx.csv_file(path, n, header=True, mode="DROPMALFORMED")
        assert dropped.count() == 2999 and dropped.map(lambda r: r[0]).sum() == sum(range(1, 3001)) - 1234
        assert ctx.malformed_rows(dropped) == 1 and ctx.malformed_rows(dropped.map(lambda r: r)) == 1
        kept = ctx.csv_file(path, n, header=True, mode="PERMISSIVE")
        assert kept.filter(lambda r: r[3] is not None).collect() == [(1234, 617.0, "name 1234",
                                                                     '1234,617.0,"name 1234')]
        assert kept.count() == 3000


def test_text_that_is_not_utf8_names_its_line_in_the_file(ctx, tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"".join(b"line %d\n" % i for i in range(200)).replace(b"line 150", b"line \xff50"))
    for n in (1, 3, 8):
        with pytest.raises(MalformedInputError, match=r"in\.txt' is not utf-8 text: .* at line 151 ") as info:
            ctx.text_file(path, n).collect()
        assert info.value.line == 151
    with pytest.raises(MalformedInputError, match=r"whole_text_files: .*in\.txt' is not utf-8 text: .* at line 151 "):
        ctx.whole_text_files(path).collect()


def test_modes_and_names_are_checked(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("a,_corrupt_record\n1,2\n")
    with pytest.raises(ConfigError, match="mode must be one of FAILFAST, DROPMALFORMED, PERMISSIVE"):
        CsvSource(str(path), 1, header=True, mode="LENIENT")
    with pytest.raises(ConfigError, match="corrupt_record_column '_corrupt_record' is the name of a column"):
        CsvSource(str(path), 1, header=True, mode="PERMISSIVE")
    assert CsvSource(str(path), 1, header=True, mode="dropMalformed").mode == "DROPMALFORMED"
    for bad in (";;", '"', "\n", ""):
        with pytest.raises(ConfigError, match="delimiter must be one single-byte character"):
            CsvSource(str(path), 1, delimiter=bad)


# -- special files -----------------------------------------------------------------------------------
def test_special_files_are_refused_by_name_by_every_reader(tmp_path):
    """A FIFO read as a file gave [] (its size is 0), or hung on the header; a device or a
    socket the same. Named, in a directory (recursive or not) or matched by a glob, each
    is refused by every reader before any job runs."""
    ext = {"parquet_file": ".parquet", "npy_file": ".npy"}  # the files these take from a directory
    for suffix in ("", *ext.values()):
        (tmp_path / f"d{suffix}").mkdir()
        os.mkfifo(tmp_path / f"d{suffix}" / f"pipe{suffix}")
        (tmp_path / f"s{suffix}").mkdir()
    servers = [socket.socket(socket.AF_UNIX) for _ in range(3)]
    try:
        for server, suffix in zip(servers, ("", *ext.values())):
            server.bind(str(tmp_path / f"s{suffix}" / f"sock{suffix}"))
        with Context(backend="threads", parallelism=1, progress=False, local_dirs=[str(tmp_path / "l")]) as c:
            for read in (c.text_file, c.csv_file, c.whole_text_files, c.binary_files, c.parquet_file, c.npy_file,
                         c.pickle_file):
                suffix = ext.get(read.__name__, "")
                fifo = tmp_path / f"d{suffix}" / f"pipe{suffix}"
                for spec, kind in [(fifo, "a FIFO"), (fifo.parent, "a FIFO"), (f"{fifo.parent}/p*", "a FIFO"),
                                   (tmp_path / f"s{suffix}", "a socket"), ("/dev/null", "a character device")]:
                    with pytest.raises(SpecialFileError, match=f"{read.__name__}: '.*' is {kind}"):
                        read(spec)
            with pytest.raises(SpecialFileError, match="pipe' is a FIFO"):
                c.text_file(tmp_path, recursive=True)
    finally:
        for server in servers:
            server.close()


# -- the checks themselves ---------------------------------------------------------------------------
@pytest.mark.parametrize("line,open_", [
    (b'a,"b"', False), (b'a,"b', True), (b'"a""",b', False), (b'"a"",b', True), (b'a,b"c,d', False),
    (b'"a"b"c,d', False), (b'a,"b,c""', True), (b"", False), (b'"', True), (b'""', False), (b'a,"', True),
])
def test_quote_left_open_reads_quotes_as_pyarrow_does(line, open_):
    import pyarrow.csv as pacsv

    assert quote_left_open(line, ",") is open_
    assert (csv_lines._closed_line(",").fullmatch(line) is None) is open_  # the slow path's regex
    if line:  # pyarrow's own reading: an open quote takes the newline into a value, or never ends its row
        try:
            table = pacsv.read_csv(pa.BufferReader(line + b"\nz\n"), read_options=pacsv.ReadOptions(
                autogenerate_column_names=True), convert_options=pacsv.ConvertOptions(
                column_types={f"f{i}": pa.string() for i in range(4)}),
                parse_options=pacsv.ParseOptions(invalid_row_handler=lambda row: "skip"))
            swallowed = csv_lines.newline_in_values(table)
        except pa.ArrowInvalid:
            swallowed = True
        assert swallowed is open_


def test_the_regex_and_the_scan_agree_on_every_short_line():
    """Every line of up to 6 characters from ``a , " ;``: the regex the slow path runs on
    every quoted line reads quotes exactly as ``quote_left_open`` does."""
    import itertools

    for delimiter in (",", ";"):
        closed = csv_lines._closed_line(delimiter)
        for k in range(7):
            for chars in itertools.product(b'a,";', repeat=k):
                line = bytes(chars)
                assert (closed.fullmatch(line) is None) is quote_left_open(line, delimiter), (line, delimiter)


def test_describe_error_drops_the_row_number():
    assert describe_error("CSV parse error: Row #1613: Expected 3 columns, got 2: 1,2", ["a"]) == \
        "expected 3 fields, got 2"
    assert describe_error("In CSV column #1: Row #9: CSV conversion error to int64: invalid value 'x'",
                          ["a", "b"]) == "column 'b': invalid value 'x' (not a int64)"


def test_without_memchr_the_check_is_the_same(tmp_path, monkeypatch):
    """Where there is no C library to call (``_MEMCHR`` False), the newline check copies
    windows out instead: same answers."""
    monkeypatch.setattr(csv_lines, "_MEMCHR", False)
    monkeypatch.setattr(csv_lines, "_WINDOW", 7)
    path = tmp_path / "in.csv"
    lines, want = _lines(12)
    _write(path, lines[:6] + [b'6,name,1.5,"note'] + lines[7:])
    assert _rows(_read(path, 3, "DROPMALFORMED")) == want[:6] + want[7:]
    _write(path, lines)
    assert _rows(_read(path, 3, "FAILFAST")) == want
