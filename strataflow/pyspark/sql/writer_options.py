"""The options of ``df.write.csv/json/text/parquet``: each honoured with Spark's meaning and
default, or refused by name (as the readers' ``reader_options``), never ignored: a writer
that dropped ``nullValue`` would write other bytes than the program asked for.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Callable

from strataflow.pyspark.errors import UnsupportedOperation
from strataflow.pyspark.sql.reader_options import _bool, _char, _sep, _text

__all__ = ["writer_options"]


def _only(allowed: tuple, why: str, parse: Callable[[str, Any], Any] = _text) -> Callable[[str, Any], Any]:
    def check(name: str, v: Any) -> Any:
        value = parse(name, v)
        norm = value.lower() if isinstance(value, str) else value
        if norm not in allowed:
            raise UnsupportedOperation(f"[UNSUPPORTED_OPTION] df.write option {name}={v!r} is not supported by "
                                       f"strataflow ({why})")
        return value
    return check


_CODECS = {"none": None, "uncompressed": None, "gzip": "gzip", "gz": "gzip", "bzip2": "bzip2", "bz2": "bzip2",
           "deflate": "deflate", "xz": "xz"}


def _codec(name: str, v: Any) -> str | None:
    key = str(v).lower()
    if key not in _CODECS:
        raise UnsupportedOperation(f"[UNSUPPORTED_OPTION] df.write option {name}={v!r} is not supported: strataflow "
                                   f"writes text compressed with none, gzip, bzip2, deflate or xz")
    return _CODECS[key]


_UTF8 = ("encoding", _only(("utf-8", "utf8"), "files are written in UTF-8"), "utf-8")
_NEWLINE = ("line_sep", _only(("\n",), "records end with \\n"), "\n")
_CSV = {
    "header": ("header", _bool, False), "sep": ("sep", _sep, ","), "delimiter": ("sep", _sep, ","),
    "nullvalue": ("null_value", _text, ""), "emptyvalue": ("empty_value", _text, '""'),
    "quote": ("quote", _char, '"'), "escape": ("escape", _char, "\\"), "quoteall": ("quote_all", _bool, False),
    "escapequotes": ("_unused", _only((True,), "quotes inside values are always escaped", _bool), True),
    "ignoreleadingwhitespace": ("trim_leading", _bool, True),
    "ignoretrailingwhitespace": ("trim_trailing", _bool, True),
    "linesep": ("line_sep", _text, "\n"), "encoding": _UTF8, "charset": _UTF8, "compression": ("codec", _codec, None),
    "codec": ("codec", _codec, None),
}
_JSON = {"compression": ("codec", _codec, None), "codec": ("codec", _codec, None), "encoding": _UTF8,
         "linesep": _NEWLINE, "ignorenullfields": ("ignore_null_fields", _bool, True)}
_TEXT = {"compression": ("codec", _codec, None), "codec": ("codec", _codec, None), "linesep": _NEWLINE}
_PARQUET = {"compression": ("codec", _only(("snappy",), "Parquet parts are written with snappy"), "snappy"),
            "parquet.compression": ("codec", _only(("snappy",), "Parquet parts are written with snappy"), "snappy")}
_FORMATS = {"csv": _CSV, "json": _JSON, "text": _TEXT, "parquet": _PARQUET}


def writer_options(fmt: str, given: dict[str, Any]) -> SimpleNamespace:
    """A ``fmt`` writer's options as attributes, Spark's defaults for those not given;
    UnsupportedOperation for an unknown name or a value strataflow does not write."""
    table = _FORMATS[fmt]
    out = SimpleNamespace(**{attr: default for attr, _, default in table.values()})
    for key, value in given.items():
        if value is None:
            continue
        spec = table.get(key.lower())
        if spec is None:
            raise UnsupportedOperation(f"[UNSUPPORTED_OPTION] df.write.{fmt} has no option {key!r} in strataflow; it "
                                       f"takes: {', '.join(sorted(table))}")
        attr, parse, _ = spec
        setattr(out, attr, parse(key, value))
    return out
