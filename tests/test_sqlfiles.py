"""runner/audit/sqlfiles.py's one exception for values that cannot be bound: `{path:NAME}` file paths (a COPY's
target, the files a view reads). A path is written as one SQL string literal whatever characters it holds, and
only a path inside the caller's scratch folder is written at all."""
from __future__ import annotations

import os

import duckdb
import pytest

from kvreport.runner.audit.sqlfiles import run_sql

# A file name that ends the literal and appends a statement, were its quote not doubled.
HOSTILE = "x'); DROP TABLE t; COPY (SELECT 'y') TO ('z"


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT 42 AS answer")
    yield c
    c.close()


def _write(con, path, scratch):
    run_sql(con, "distributed/write_table", dict(table="t", columns="answer"), paths=dict(file=path),
            scratch=scratch)


def test_a_quote_in_a_path_cannot_end_its_literal(con, tmp_path):
    target = tmp_path / f"{HOSTILE}.parquet"
    _write(con, target, tmp_path)
    assert os.listdir(tmp_path) == [target.name]  # that one file, under its whole name, and nothing else
    assert con.execute("SELECT answer FROM t").fetchall() == [(42,)]  # t not dropped
    assert con.execute("SELECT answer FROM read_parquet(?)", [str(target)]).fetchall() == [(42,)]


def test_a_list_of_paths_with_quotes_is_one_list_literal(con, tmp_path):
    files = [tmp_path / f"{HOSTILE}-{i}" / "_calls_priced.parquet" for i in range(2)]
    for f in files:
        f.parent.mkdir()
        _write(con, f, tmp_path)
    run_sql(con, "distributed/calls_priced_view", paths=dict(files=files), scratch=tmp_path)
    assert con.execute("SELECT answer FROM _calls_priced").fetchall() == [(42,), (42,)]
    assert con.execute("SELECT answer FROM t").fetchall() == [(42,)]


@pytest.mark.parametrize("where", ["outside", "dotdot", "scratch itself", "symlink out"])
def test_a_path_outside_the_scratch_folder_is_refused(con, tmp_path, where):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    path = {"outside": tmp_path / "a.parquet", "dotdot": scratch / ".." / "a.parquet", "scratch itself": scratch,
            "symlink out": scratch / "link" / "a.parquet"}[where]
    (scratch / "link").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(ValueError, match="not inside the scratch folder"):
        _write(con, path, scratch)
    assert not (tmp_path / "a.parquet").exists()


def test_paths_need_a_scratch_folder_and_every_placeholder_filled(con, tmp_path):
    with pytest.raises(ValueError, match="scratch folder"):
        _write(con, tmp_path / "a.parquet", None)
    with pytest.raises(KeyError, match="needs the path file"):
        run_sql(con, "distributed/write_table", dict(table="t", columns="answer"), paths={}, scratch=tmp_path)
    with pytest.raises(KeyError, match="needs paths="):
        run_sql(con, "distributed/write_table", dict(table="t", columns="answer"))
