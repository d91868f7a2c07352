"""Logged times at their edges: kv_sts (sql/setup/macros.sql) reads each form by one conversion where the
window [2000, 2100) cannot matter and takes the exact general path near its edges. Each edge is pinned to its
value here (Unix units, the window in every unit, offsets, fractions, garbage), kv_sts must give what the
general path (kv_sts_any) gives, and a time that is not one is a reject that keeps its line."""
from __future__ import annotations

import json
from datetime import datetime

import duckdb
import pytest

from conftest import quiet_audit

IN, OUT = "in", None
T = datetime.fromisoformat

# (text, the UTC time it is, or None: not a time an audit accepts)
EDGES = [
    # Unix seconds, milliseconds, microseconds, nanoseconds, integer and float
    ("1748858400", T("2025-06-02 10:00:00")), ("1748858400.5", T("2025-06-02 10:00:00.5")),
    ("1748858400123", T("2025-06-02 10:00:00.123")), ("1748858400123.5", T("2025-06-02 10:00:00.1235")),
    ("1748858400123456", T("2025-06-02 10:00:00.123456")),
    ("1748858400123456789", T("2025-06-02 10:00:00.123457")),  # rounded to the microsecond
    # each unit's band ends where the next begins: 99,999,999,999 s is year 5138, 1e11 ms is 1973
    ("99999999999", None), ("100000000000", None), ("99999999999999", None), ("100000000000000", None),
    ("99999999999999999", None), ("100000000000000000", None), ("99999999999999999999", None),
    # the window's edges in every unit
    ("946684800", T("2000-01-01")), ("946684799", None), ("946684799.9999996", T("2000-01-01")),
    ("946684801", T("2000-01-01 00:00:01")), ("4102444799", T("2099-12-31 23:59:59")), ("4102444800", None),
    ("4102444798.999999", T("2099-12-31 23:59:58.999999")),
    ("946684800000", T("2000-01-01")), ("946684799999", None), ("4102444799999", T("2099-12-31 23:59:59.999")),
    ("4102444800000", None), ("946684800000000", T("2000-01-01")), ("946684799999999", None),
    ("4102444800000000", None), ("946684800000000000", T("2000-01-01")), ("946684799999999000", None),
    ("4102444799999999000", T("2099-12-31 23:59:59.999999")), ("4102444800000000000", None),
    # ISO-8601: fractions, offsets (converted to UTC), the window's edges moved by an offset
    ("2025-06-02T10:00:00Z", T("2025-06-02 10:00:00")), ("2025-06-02T10:00:00.5Z", T("2025-06-02 10:00:00.5")),
    ("2025-06-02T10:00:00.123456Z", T("2025-06-02 10:00:00.123456")),
    ("2025-06-02 10:00:00.123456", T("2025-06-02 10:00:00.123456")),
    ("2025-06-02T12:00:00+02:00", T("2025-06-02 10:00:00")), ("2025-06-02T04:30:00-05:30", T("2025-06-02 10:00:00")),
    ("2025-06-02T10:00:00.1234567Z", T("2025-06-02 10:00:00.123456")),
    ("2025-06-03T00:00:00+14:00", T("2025-06-02 10:00:00")), ("2025-06-02T10:00:00+14:01", None),
    ("2000-01-01T00:00:00Z", T("2000-01-01")), ("1999-12-31T23:59:59.999999Z", None),
    ("2000-01-01T00:30:00+01:00", None), ("1999-12-31T23:30:00-01:00", T("2000-01-01 00:30:00")),
    ("2099-12-31T23:59:59.999999Z", T("2099-12-31 23:59:59.999999")), ("2100-01-01T00:00:00Z", None),
    ("2099-12-31T23:30:00-01:00", None), ("2100-01-01T00:30:00+01:00", T("2099-12-31 23:30:00")),
    ("2001-01-01T00:00:00+14:00", T("2000-12-31 10:00:00")), ("2098-12-31T23:59:59-14:00", T("2099-01-01 13:59:59")),
    # offsets around the hour kv_iso_ok settles without a cast (12) and those it leaves to the general path
    ("2025-06-02T22:59:00+12:59", T("2025-06-02 10:00:00")), ("2025-06-02T23:00:00+13:00", T("2025-06-02 10:00:00")),
    ("2025-06-02T23:59:00+13:59", T("2025-06-02 10:00:00")), ("2025-06-02T10:00:00+12:99", T("2025-06-01 20:21:00")),
    ("2025-06-02T10:00:00+13:99", None), ("2025-06-01T21:01:00-12:59", T("2025-06-02 10:00:00")),
    ("2025-06-02T12:00:00+0200", T("2025-06-02 10:00:00")), ("2025-06-02T10:00:00+1401", None),
    ("2025-06-02T12:00:00 +02:00", None), ("2025-06-02T10:00:00+1:00", None),
    ("2025-06-02T10:00:00+14:00Z", None), ("2025-06-02 10:00Z", T("2025-06-02 10:00:00")), ("2025-06-02Z", None),
    ("2025-06-02", T("2025-06-02 00:00:00")), ("1748858400Z", None), ("1748858400-", None),
    # garbage: not times
    ("2025-02-30T10:00:00Z", None), ("2025-13-01T00:00:00Z", None), ("2025-06-02T25:00:00Z", None),
    ("yesterday", None), ("", None), (" ", None), ("NaN", None), ("inf", None), ("-1748858400", None),
    ("1748858400.", None), ("2025-06-02T10:00:00 Europe/BerlinZ", None), ("20250602", None),
]


@pytest.fixture(scope="module")
def con():
    from kvreport.runner.audit.sqlfiles import run_sql

    c = duckdb.connect()
    c.execute("SET TimeZone = 'UTC'")
    run_sql(c, "setup/macros")
    yield c
    c.close()


@pytest.mark.parametrize("text,want", EDGES, ids=[repr(t) for t, _ in EDGES])
def test_each_time_edge_reads_as_its_value(con, text, want):
    got, general = con.execute("SELECT kv_sts(?), kv_sts_any(?)", [text, text]).fetchone()
    assert got == want
    assert got == general


def test_unparseable_and_out_of_window_times_are_rejects_that_keep_their_line(tmp_path):
    good = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1748858400, "model": "gpt-4o-mini",
            "usage": {"prompt_tokens": 10, "completion_tokens": 2}, "metadata": {"session_id": "s-1"}}
    bad = ["yesterday", "946684799", "2025-06-02T10:00:00+14:01", "99999999999"]
    lines = [good] + [dict(good, created=t) for t in bad] + [good]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    db = tmp_path / "a.duckdb"
    summary = quiet_audit([log], fmt="openai-chat", db=db)
    with duckdb.connect(str(db), read_only=True) as c:
        rejects = dict(c.execute("SELECT line, reason FROM token_rejects ORDER BY line").fetchall())
        times = c.execute("SELECT line, start_time FROM token_calls ORDER BY line").fetchall()
    assert summary["n_calls"] == 2
    assert rejects == {2 + i: f"$.created is not a time (got {t})" for i, t in enumerate(bad)}
    assert times == [(1, T("2025-06-02 10:00:00")), (6, T("2025-06-02 10:00:00"))]
