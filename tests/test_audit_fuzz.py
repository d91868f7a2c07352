"""Fuzz: `kvreport audit` survives any line, in every format (issue 16).

Hypothesis mutates valid records in the ways a log goes wrong: any JSON type in any field, out-of-range and
non-finite numbers, number texts json.dumps never writes (1e999, -0, 1E5), truncation, stray JSON values,
BOMs, NULs, lone carriage returns, huge fields, duplicate keys, deeply nested values, blank lines. The
first line of every file stays valid, so every audit has something to store. For every input:
  - exit 0: no traceback, no "internal error" (any exception but the CLI's UserError fails the test);
  - every non-blank line is exactly one call or one reject, at its own line number (so calls + rejects =
    non-blank lines; OpenTelemetry: a line whose spans no longer carry a gen_ai attribute may be neither);
  - with --strict: exit 1 with nothing written exactly when something was rejected.
Fixed seed (derandomize) and example budget, so CI runs the same cases every time and stays fast.
"""
from __future__ import annotations

import csv
import io
import json
import math
import os
import zlib
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from kvreport.runner.audit.linescan import BLANK_CHARS
from conftest import quiet_audit

# Fuzzing: seconds per test, not milliseconds (`pytest -m 'not slow'` for a quick pass; CI runs everything).
pytestmark = pytest.mark.slow

# Per format; each example is a whole file of up to 30 lines, audited once or twice (about 0.3 s each on a
# 2-core CPU). KVREPORT_FUZZ_EXAMPLES=500 runs a deeper search (same seed, more cases).
EXAMPLES = int(os.environ.get("KVREPORT_FUZZ_EXAMPLES", "15"))
RUNS: dict[str, int] = {}  # examples that ran, per test: each test checks its whole budget ran


def _ran(name: str) -> None:
    RUNS[name] = RUNS.get(name, 0) + 1


def _whole_budget_ran(name: str) -> None:
    assert RUNS.pop(name, 0) == EXAMPLES, f"{name}: fewer examples than the budget ran"
# No shrinking: an example costs a whole audit, and a failure prints its file anyway.
FUZZ = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, print_blob=True,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])


# --- what goes into a field ---------------------------------------------------------------------------------

class Raw(str):
    """JSON text written as is: what json.dumps never produces (1e999, -0, 00012, NaN inside a list)."""


RAW_NUMBERS = ["1e999", "-1e999", "-0", "1E5", "1.0e+2", "00012", "12.", ".5", "NaN", "-Infinity", "1e-400",
               "18446744073709551616", "9223372036854775808", "-9223372036854775809", "10000000000", "10000000001",
               "9999999999", "12.000", "0.0"]
SPECIAL = [0, 1, -1, 2 ** 31, 2 ** 53 + 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64, 2 ** 70, 10 ** 10, 10 ** 10 + 1, -2 ** 63,
           1e300, -1e300, 12.5, -0.0, 5e-324, 1e18, 1e20, 1.7e9, 1.7e12, 1.7e15, 1.7e18, 1.7e21,
           float("nan"), float("inf"), float("-inf")]
STRINGS = ["NaN", "Infinity", "-inf", "12", " 12", "12 tokens", "", " ", "1e400", "-5", "0x10", "1_000", "true",
           "null", "2025-01-01T00:00:00Z", "2025-13-45T99:99:99", "infinity", "-infinity", "epoch", "294277-01-01",
           "1735689600", "1735689600000000000000", "\u0000", "\ufeff", "日本語", "\ud7ff", '"quoted"', "a,b", "\n"]

scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from(SPECIAL), st.integers(min_value=-2 ** 80, max_value=2 ** 80),
    st.floats(), st.sampled_from(STRINGS), st.text(max_size=12), st.sampled_from(RAW_NUMBERS).map(Raw),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(st.text(max_size=6), inner, max_size=3)),
                      max_leaves=6)


def dumps(obj) -> str:
    """json.dumps that writes Raw values verbatim (and NaN/Infinity as Python writes them)."""
    raws: list[str] = []

    def mark(o):
        if isinstance(o, Raw):
            raws.append(str(o))
            return f"\x01RAW{len(raws) - 1}\x01"
        if isinstance(o, dict):
            return {k: mark(v) for k, v in o.items()}
        if isinstance(o, list):
            return [mark(v) for v in o]
        return o

    text = json.dumps(mark(obj), ensure_ascii=False)
    for i, r in enumerate(raws):
        text = text.replace(json.dumps(f"\x01RAW{i}\x01"), r)
    return text


def paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from paths(v, prefix + (i,))


def _set(obj, path, value):
    if not path:
        return value
    *head, last = path
    node = obj
    for p in head:
        node = node[p]
    node[last] = value
    return obj


def _del(obj, path):
    *head, last = path
    node = obj
    for p in head:
        node = node[p]
    if isinstance(node, dict):
        del node[last]
    else:
        node.pop(last)
    return obj


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


class Line:
    """One line of a generated file, and what the oracle needs to know about it."""

    def __init__(self, text: str, dup_keys: bool = False):
        self.text, self.dup_keys = text, dup_keys

    def __repr__(self) -> str:
        return f"Line({self.text[:300]!r}{', dup_keys=True' if self.dup_keys else ''})"


@st.composite
def mutated_line(draw, base):
    """One record of `base`, mutated once or twice, as a line of text."""
    rec = json.loads(json.dumps(base))
    dup = False
    for _ in range(draw(st.integers(1, 2))):
        all_paths = list(paths(rec))
        path = draw(st.sampled_from(all_paths))
        op = draw(st.sampled_from(["replace", "replace", "replace", "delete", "duplicate", "nest", "huge"]))
        if op == "delete" and path:
            rec = _del(rec, path)
        elif op == "duplicate" and isinstance(_get(rec, path), dict) and _get(rec, path):
            node = _get(rec, path)
            key = draw(st.sampled_from(sorted(node)))
            rec = _set(rec, path, Raw("{" + json.dumps(key) + ": " + dumps(draw(values)) + ", " + dumps(node)[1:]))
            dup = True
            break  # a Raw node cannot be walked into again
        elif op == "nest":
            depth = draw(st.sampled_from([64, 1000, 5000]))
            rec = _set(rec, path, Raw("[" * depth + "1" + "]" * depth))
            break
        elif op == "huge":
            rec = _set(rec, path, "x" * draw(st.sampled_from([70_000, 70_000, 70_000, 2_200_000])))
        else:
            rec = _set(rec, path, draw(values))
        if isinstance(rec, Raw):
            break
    text = dumps(rec)
    damage = draw(st.sampled_from(["none", "none", "none", "truncate", "bom", "nul", "cr", "stray", "trailing"]))
    if damage == "truncate":
        text = text[:draw(st.integers(1, max(1, len(text) - 1)))]
    elif damage == "bom":
        text = "\ufeff" + text
    elif damage == "nul":
        at = draw(st.integers(0, len(text)))
        text = text[:at] + "\x00" + text[at:]
    elif damage == "cr":
        at = draw(st.integers(1, len(text)))
        text = text[:at] + "\r" + text[at:]
    elif damage == "stray":
        text = draw(st.one_of(st.sampled_from(["123", '"x"', "[1, 2]", "null", "true", "[]", "{}", "{,}", "}"]),
                              values.map(dumps)))
    elif damage == "trailing":
        text += draw(st.sampled_from([" ", "\t", " {}", ",", "\r"]))
    return Line(text, dup)


BLANKS = st.sampled_from(["", " ", "   ", "\t", " \t ", "\ufeff", "\r"])


@st.composite
def jsonl_file(draw, base) -> list[Line]:
    lines = [Line(json.dumps(base))]  # a valid first line: the format is detected and something is stored
    for _ in range(draw(st.integers(1, 29))):
        lines.append(Line(draw(BLANKS)) if draw(st.integers(0, 5)) == 0 else draw(mutated_line(base)))
    return lines


# --- running the audit ------------------------------------------------------------------------------------------

def _audit(path: Path, db: Path, strict: bool = False) -> tuple[int, str]:
    """`kvreport audit PATH --db DB [--strict]`'s exit code and error message, as the CLI ends it: 0, or a
    UserError's code and message. Anything else (the CLI's "internal error") propagates with its traceback
    and fails the test. In-process through the library (runner/audit/api.py): building the Typer app per call
    costs more than the audit itself."""
    from kvreport.runner.core.errors import UserError

    try:
        quiet_audit([path], db, strict=strict)
    except UserError as exc:
        return exc.exit_code, f"error: {exc}"
    return 0, ""


def _newest_audit(db: Path) -> tuple[int, list[int], list[int], int]:
    """(audits in the DB, call lines, reject lines, skipped lines) of the newest audit."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        n = con.execute("SELECT count(*) FROM audits").fetchone()[0]
        aid = f"audit-{n}"
        calls = [r[0] for r in con.execute("SELECT line FROM token_calls WHERE audit_id = ?", [aid]).fetchall()]
        rejects = [r[0] for r in con.execute("SELECT line FROM token_rejects WHERE audit_id = ?", [aid]).fetchall()]
        skipped = con.execute("SELECT n_skipped_lines FROM audits WHERE audit_id = ?", [aid]).fetchone()[0]
    finally:
        con.close()
    return n, calls, rejects, skipped


def _n_audits(db: Path) -> int:
    if not db.exists():
        return 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT count(*) FROM audits").fetchone()[0]
    finally:
        con.close()


def check_audit(db: Path, path: Path, expected_lines: list[int], blank_lines: int | None,
                may_be_empty: set[int] = frozenset()) -> None:
    """The property, for one file audited into `db` (one DB per test, so its schema is made once): exit 0,
    each expected line exactly once, blank lines counted; on every other file (by a checksum, so the
    choice is fixed) --strict first: exit 1 and nothing written exactly when something is rejected."""
    before = _n_audits(db)
    strict = zlib.crc32(path.read_bytes()) % 2 == 0
    if strict:
        code, err = _audit(path, db, strict=True)
        assert code in (0, 1), err
        if code == 1:
            assert "--strict" in err and _n_audits(db) == before, err
        else:
            before += 1
    code2, err2 = _audit(path, db)
    assert code2 == 0, err2
    n, calls, rejects, skipped = _newest_audit(db)
    assert n == before + 1
    seen = sorted(calls + rejects)
    assert len(seen) == len(set(seen)), f"a line counted twice: {seen}"
    must = sorted(set(expected_lines) - set(may_be_empty))
    assert set(must) <= set(seen) <= set(expected_lines), (must, seen)
    if blank_lines is not None:
        assert skipped == blank_lines
    if strict:
        assert (code == 1) == bool(rejects), (code, rejects)


def write_jsonl(folder: Path, lines: list[Line], name: str) -> tuple[Path, list[int], int]:
    """The file, the lines that must be a call or a reject, and how many are blank."""
    path = folder / name
    path.write_bytes("\n".join(x.text for x in lines).encode("utf-8", "surrogatepass") + b"\n")
    expected = [i + 1 for i, x in enumerate(lines) if x.text.strip(BLANK_CHARS)]
    return path, expected, len(lines) - len(expected)


# --- the formats -------------------------------------------------------------------------------------------------

OPENAI = {"session_id": "s-1", "timestamp": "2025-01-01T00:00:00Z",
          "request": {"model": "gpt-4o", "messages": [{"role": "system", "content": "Be brief."},
                                                      {"role": "user", "content": "hi"}]},
          "response": {"object": "chat.completion", "created": 1735689600, "model": "gpt-4o-2024-08-06",
                       "usage": {"prompt_tokens": 100, "completion_tokens": 5,
                                 "prompt_tokens_details": {"cached_tokens": 64}}}}
ANTHROPIC = {"session_id": "s-1", "timestamp": 1735689600,
             "request": {"model": "claude-sonnet-4", "system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]},
             "response": {"type": "message", "model": "claude-sonnet-4",
                          "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 80,
                                    "cache_creation_input_tokens": 10}}}
SESSIONS = {"session_id": "s-1", "system_tokens": 2000, "user_tokens": 150, "assistant_tokens": 300,
            "cached_input_tokens": 2000, "first_seen": "2025-01-01T00:00:00Z", "last_activity": 1735689700,
            "disconnected_at": None, "model": "gpt2"}
OTEL = {"resourceSpans": [{"resource": {"attributes": []}, "scopeSpans": [{"spans": [{
    "traceId": "t1", "spanId": "0000000000000001", "name": "chat gpt-4o",
    "startTimeUnixNano": "1735689600000000000", "endTimeUnixNano": 1735689601500000000,
    "attributes": [
        {"key": "gen_ai.provider.name", "value": {"stringValue": "openai"}},
        {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}},
        {"key": "gen_ai.conversation.id", "value": {"stringValue": "conv-1"}},
        {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "1000"}},
        {"key": "gen_ai.usage.output_tokens", "value": {"intValue": 20}},
        {"key": "gen_ai.usage.cache_read.input_tokens", "value": {"intValue": "499"}}]}]}]}]}

JSONL_FORMATS = {"openai": OPENAI, "anthropic": ANTHROPIC, "sessions": SESSIONS}


@pytest.mark.parametrize("fmt", sorted(JSONL_FORMATS))
def test_fuzz_jsonl(fmt, tmp_path):
    @FUZZ
    @given(jsonl_file(JSONL_FORMATS[fmt]))
    def prop(lines):
        _ran(fmt)
        path, expected, blank = write_jsonl(tmp_path, lines, f"{fmt}.jsonl")
        check_audit(tmp_path / "fuzz.duckdb", path, expected, blank)

    prop()
    _whole_budget_ran(fmt)


def _otel_has_genai_span(text: str) -> bool:
    """What the OTel reader counts as a call, judged by Python's parser."""
    try:
        rec = json.loads(text)
    except ValueError:
        return True  # malformed: must be a reject
    except RecursionError:
        return False  # nested beyond Python's parser; DuckDB's reads it, so the oracle cannot judge it
    if not isinstance(rec, dict) or "resourceSpans" not in rec:
        return True  # not an export: must be a reject

    def lst(x):
        return x if isinstance(x, list) else []

    for rs in lst(rec["resourceSpans"]):
        for ss in lst(rs.get("scopeSpans") if isinstance(rs, dict) else None):
            for span in lst(ss.get("spans") if isinstance(ss, dict) else None):
                attrs = span.get("attributes") if isinstance(span, dict) else None
                if any(isinstance(a, dict) and isinstance(a.get("key"), str) and a["key"].startswith("gen_ai.")
                       for a in lst(attrs)):
                    return True
    return False


def test_fuzz_otel(tmp_path):
    @FUZZ
    @given(jsonl_file(OTEL))
    def prop(lines):
        _ran("otel")
        path, expected, blank = write_jsonl(tmp_path, lines, "otel.jsonl")
        may_be_empty = {i + 1 for i, x in enumerate(lines) if x.dup_keys or not _otel_has_genai_span(x.text)}
        check_audit(tmp_path / "fuzz.duckdb", path, expected, blank, may_be_empty)

    prop()
    _whole_budget_ran("otel")


# --- sessions as CSV and Parquet: bad cells are rejects, never a failed file ---------------------------------------

HEADER = ["session_id", "system_tokens", "user_tokens", "assistant_tokens", "cached_input_tokens", "first_seen",
          "last_activity"]
GOOD_ROW = ["s-1", "2000", "150", "300", "2000", "2025-01-01T00:00:00Z", "1735689700"]
cells = st.one_of(st.sampled_from(["", " ", "12", "-1", "2.5", "1e999", "1e300", "NaN", "inf", "007", "-0", "12.",
                                   "18446744073709551616", "10000000001", "a,b", 'say "hi"', "line\nbreak", "cr\rhere",
                                   "\x00", "\ufeff12", "2025-01-01", "infinity", "x" * 70_000]),
                  st.text(max_size=10), st.integers(-2 ** 70, 2 ** 70).map(str), st.floats().map(repr))


@st.composite
def csv_file(draw) -> tuple[str, list[int], int]:
    """A sessions CSV (header, a valid first row, then mutated rows and blank lines) and the line each
    non-blank record starts on."""
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(HEADER)
    w.writerow(GOOD_ROW)
    expected, blank = [2], 0
    for _ in range(draw(st.integers(1, 29))):
        line = 1 + out.getvalue().count("\n")
        if draw(st.integers(0, 5)) == 0:
            out.write(draw(st.sampled_from(["", " ", "\t "])) + "\n")
            blank += 1
            continue
        row = list(GOOD_ROW)
        for _ in range(draw(st.integers(1, 3))):
            row[draw(st.integers(0, len(row) - 1))] = draw(cells)
        shape = draw(st.sampled_from(["same", "same", "extra", "short"]))
        row = row + ["9"] if shape == "extra" else row[:draw(st.integers(1, len(row)))] if shape == "short" else row
        w.writerow(row)
        if "".join(row).strip(BLANK_CHARS) or len(row) > 1:
            expected.append(line)
        else:
            blank += 1
    return out.getvalue(), expected, blank


def test_fuzz_sessions_csv(tmp_path):
    @FUZZ
    @given(csv_file())
    def prop(case):
        _ran("csv")
        text, expected, blank = case
        path = tmp_path / "sessions.csv"
        path.write_text(text, encoding="utf-8", newline="")
        if "\r" in text:  # a lone \r ends a line for the csv module (and editors): numbers may shift after it
            everything = list(range(2, 2 + len(text.splitlines())))
            check_audit(tmp_path / "fuzz.duckdb", path, everything, None, may_be_empty=set(everything) - {2})
        else:
            check_audit(tmp_path / "fuzz.duckdb", path, expected, blank)

    prop()
    _whole_budget_ran("csv")


PARQUET_TYPES = st.sampled_from(["int64", "uint64", "float64", "string", "bool", "timestamp", "list", "struct", "null"])


def _parquet_value(draw, kind):
    if kind == "int64":
        return draw(st.one_of(st.none(), st.integers(-2 ** 63, 2 ** 63 - 1)))
    if kind == "uint64":
        return draw(st.one_of(st.none(), st.integers(0, 2 ** 64 - 1)))
    if kind == "float64":
        return draw(st.one_of(st.none(), st.floats(), st.sampled_from([1e300, -0.0, 12.5, 2.0, math.nan])))
    if kind == "string":
        return draw(st.one_of(st.none(), cells, st.text(max_size=8)))
    if kind == "bool":
        return draw(st.one_of(st.none(), st.booleans()))
    if kind == "timestamp":
        import datetime as dt
        return draw(st.one_of(st.none(), st.datetimes(min_value=dt.datetime(1, 1, 1), max_value=dt.datetime(9999, 1, 1))))
    if kind == "list":
        return draw(st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=3)))
    if kind == "struct":
        return draw(st.one_of(st.none(), st.fixed_dictionaries({"a": st.integers(-5, 5)})))
    return None


@st.composite
def parquet_table(draw):
    pa = pytest.importorskip("pyarrow")
    n = draw(st.integers(1, 10))
    columns = {}
    goods = ["s-0", 2000, 150, 300, 2000, None, None]
    for name, good in zip(HEADER, goods):
        kind = draw(st.sampled_from(["good", "good"]) | PARQUET_TYPES)
        if kind == "good":
            columns[name] = pa.array([good] * n, pa.string() if good is None else None)
            continue
        typ = {"int64": pa.int64(), "uint64": pa.uint64(), "float64": pa.float64(), "string": pa.string(),
               "bool": pa.bool_(), "timestamp": pa.timestamp("us"), "list": pa.list_(pa.int64()),
               "struct": pa.struct([("a", pa.int64())]), "null": pa.null()}[kind]
        columns[name] = pa.array([_parquet_value(draw, kind) for _ in range(n)], typ)
    return pa.table(columns), n


def test_fuzz_sessions_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")

    @FUZZ
    @given(parquet_table())
    def prop(case):
        _ran("parquet")
        table, n = case
        path = tmp_path / "sessions.parquet"
        pq.write_table(table, path)
        db = tmp_path / "fuzz.duckdb"
        before = _n_audits(db)
        code, err = _audit(path, db)
        if code == 1:  # every row rejected: "no valid records", nothing written
            assert "no valid records" in err and _n_audits(db) == before, err
            return
        assert code == 0, err
        _, calls, rejects, skipped = _newest_audit(db)
        assert sorted(calls + rejects) == list(range(1, n + 1)) and skipped == 0

    prop()
    _whole_budget_ran("parquet")
