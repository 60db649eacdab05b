"""The options of ``spark.read.csv/json/text/parquet``: each one Spark documents is either
honoured with Spark's meaning and default, or refused by name with the reason.

An option Spark's reader would take but strataflow would not apply changes the answer
in silence (``nullValue`` ignored keeps "NA" as text; ``dateFormat`` ignored gives null
dates), so the table below lists, per format, what each option becomes and the values
it may take. A value strataflow does not implement (``samplingRatio=0.5``, an ``escape``
of quotes' escapes, ``allowComments=true``) raises :class:`UnsupportedOperation` naming
the option and the value; so does a name no reader of that format knows (Spark ignores
those, which hides typos such as ``nulValue``). Names are matched ignoring case, as
Spark's ``CaseInsensitiveMap`` does; values may be Python values or Spark's strings
(``True`` or ``"true"``).
"""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace
from typing import Any, Callable

from strataflow.pyspark.errors import UnsupportedOperation

__all__ = ["reader_options", "FORMAT_OPTIONS"]


def _bool(name: str, v: Any) -> bool:
    s = str(v).lower()
    if s not in ("true", "false"):
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}={v!r}: expected true or false")
    return s == "true"


def _char(name: str, v: Any) -> str | None:
    s = str(v)
    if s in ("", "\u0000"):
        return None
    if len(s) != 1:
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}={v!r}: a single character is expected")
    return s


def _text(name: str, v: Any) -> str | None:
    return None if v is None else str(v)


def _sep(name: str, v: Any) -> str:
    s = str(v)
    if s == "":
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}: the delimiter cannot be empty")
    return "\t" if s == "\\t" else s


def _mode(name: str, v: Any) -> str:
    s = str(v).upper()
    if s not in ("PERMISSIVE", "DROPMALFORMED", "FAILFAST"):
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option mode={v!r}: one of PERMISSIVE, DROPMALFORMED, "
                                   f"FAILFAST is expected")
    return s


def _encoding(name: str, v: Any) -> str:
    import codecs

    try:
        return codecs.lookup(str(v)).name
    except LookupError:
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}={v!r}: an unknown charset") from None


def _line_sep(name: str, v: Any) -> str | None:
    s = None if v is None else str(v)
    if s == "":
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}: 'lineSep' cannot be an empty string")
    return s


def _int(name: str, v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}={v!r}: an integer is expected") from None


def _time(name: str, v: Any) -> dt.datetime:
    try:
        return dt.datetime.fromisoformat(str(v))
    except ValueError:
        raise UnsupportedOperation(f"[INVALID_OPTION_VALUE] option {name}={v!r}: a timestamp "
                                   f"YYYY-MM-DDTHH:mm:ss is expected") from None


def _only(allowed: Any, why: str, parse: Callable[[str, Any], Any] = _text) -> Callable[[str, Any], Any]:
    """A parser that takes only the values in ``allowed`` and refuses others, naming ``why``."""
    def check(name: str, v: Any) -> Any:
        value = parse(name, v)
        norm = value.lower() if isinstance(value, str) else value
        if norm not in allowed:
            raise UnsupportedOperation(f"[UNSUPPORTED_OPTION] option {name}={v!r} is not supported by strataflow's "
                                       f"readers ({why})")
        return value
    return check


def _ratio(name: str, v: Any) -> float:
    r = float(v)
    if r != 1.0:
        raise UnsupportedOperation(f"[UNSUPPORTED_OPTION] option {name}={v!r} is not supported: strataflow infers "
                                   f"the schema from every row (samplingRatio=1.0); give a schema instead")
    return r


_COMMON = {  # attribute, parser, default
    "ignorecorruptfiles": ("ignore_corrupt", _bool, False), "ignoremissingfiles": ("ignore_missing", _bool, False),
    "pathglobfilter": ("path_glob_filter", _text, None),
    "recursivefilelookup": ("recursive", _bool, False),
    "modifiedbefore": ("modified_before", _time, None),
    "modifiedafter": ("modified_after", _time, None),
}
_LOCALE = ("locale", _only(("en-us",), "only the en-US locale's numbers and month names"), "en-US")
_CSV = {
    "sep": ("sep", _sep, ","), "delimiter": ("sep", _sep, ","), "encoding": ("encoding", _encoding, "utf-8"),
    "charset": ("encoding", _encoding, "utf-8"), "quote": ("quote", _char, '"'), "escape": ("escape", _char, "\\"),
    "comment": ("comment", _char, None), "header": ("header", _bool, False), "inferschema": ("infer_schema", _bool, False),
    "ignoreleadingwhitespace": ("ignore_leading", _bool, False),
    "ignoretrailingwhitespace": ("ignore_trailing", _bool, False),
    "nullvalue": ("null_value", _text, ""), "nanvalue": ("nan_value", _text, "NaN"),
    "positiveinf": ("positive_inf", _text, "Inf"), "negativeinf": ("negative_inf", _text, "-Inf"),
    "dateformat": ("date_format", _text, None), "timestampformat": ("timestamp_format", _text, None),
    "maxcolumns": ("max_columns", _int, 20480), "maxcharspercolumn": ("max_chars", _int, -1),
    "maxmalformedlogperpartition": ("max_malformed_log", _int, 10), "mode": ("mode", _mode, "PERMISSIVE"),
    "columnnameofcorruptrecord": ("corrupt_column", _text, "_corrupt_record"),
    "multiline": ("multi_line", _bool, False),
    "chartoescapequoteescaping": ("escape_escape", _only((None, "\\"), "escaping the escape character: only the "
                                                        "default", _char), None),
    "samplingratio": ("sampling_ratio", _ratio, 1.0),
    "enforceschema": ("enforce_schema", _only((True,), "enforceSchema=false checks a header against the schema; "
                                              "strataflow always uses the schema's names", _bool), True),
    "emptyvalue": ("empty_value", _text, None), "locale": _LOCALE, "linesep": ("line_sep", _line_sep, None),
    "unescapedquotehandling": ("unescaped_quotes", _only(("stop_at_delimiter",), "only STOP_AT_DELIMITER, "
                                                         "Spark's default"), "STOP_AT_DELIMITER"),
    **_COMMON,
}


def _refuse_true(why: str) -> tuple[str, Callable[[str, Any], Any], bool]:
    return ("_unused", _only((False,), why, _bool), False)


_JSON = {
    "primitivesasstring": ("primitives_as_string", _bool, False), "prefersdecimal": ("prefers_decimal", _bool, False),
    "allowcomments": _refuse_true("Java/C++ comments in JSON"),
    "allowunquotedfieldnames": _refuse_true("unquoted field names"),
    "allowsinglequotes": ("allow_single_quotes", _bool, True),
    "allownumericleadingzero": _refuse_true("numbers with leading zeros"),
    "allowbackslashescapinganycharacter": _refuse_true("backslash escapes of any character"),
    "mode": ("mode", _mode, "PERMISSIVE"), "columnnameofcorruptrecord": ("corrupt_column", _text, "_corrupt_record"),
    "dateformat": ("date_format", _text, None), "timestampformat": ("timestamp_format", _text, None),
    "multiline": ("multi_line", _bool, False), "allowunquotedcontrolchars": ("allow_control_chars", _bool, False),
    "linesep": ("line_sep", _line_sep, None), "samplingratio": ("sampling_ratio", _ratio, 1.0),
    "dropfieldifallnull": ("drop_all_null", _bool, False), "encoding": ("encoding", _encoding, None),
    "charset": ("encoding", _encoding, None), "locale": _LOCALE,
    "allownonnumericnumbers": ("allow_non_numeric", _bool, True), "useunsaferow": ("_unused", _bool, False),
    **_COMMON,
}
_TEXT = {"wholetext": ("whole_text", _bool, False), "linesep": ("line_sep", _line_sep, None), **_COMMON}
_PARQUET = {"mergeschema": ("merge_schema", _bool, False), **_COMMON}

#: per format, the option names (lower case) strataflow's readers take
FORMAT_OPTIONS: dict[str, dict] = {"csv": _CSV, "json": _JSON, "text": _TEXT, "parquet": _PARQUET}


def reader_options(fmt: str, given: dict[str, Any]) -> SimpleNamespace:
    """The options of a ``fmt`` reader as attributes (``null_value``, ``multi_line``...),
    Spark's defaults for those not given; UnsupportedOperation for an unknown name or a
    value strataflow does not implement."""
    table = FORMAT_OPTIONS[fmt]
    out = SimpleNamespace(**{attr: default for attr, _, default in table.values()})
    for key, value in given.items():
        if value is None:
            continue
        spec = table.get(key.lower())
        if spec is None:
            known = sorted({k for k in table if not k.startswith("_")})
            raise UnsupportedOperation(f"[UNSUPPORTED_OPTION] spark.read.{fmt} has no option {key!r}; "
                                       f"it takes: {', '.join(known)}")
        attr, parse, _ = spec
        setattr(out, attr, parse(key, value))
    if fmt == "json" and out.encoding is None:
        out.encoding = "utf-8"
    if fmt == "text":
        out.encoding = "utf-8"  # Spark's text source reads UTF-8 (a bad byte is U+FFFD)
    return out
