"""The audit pipeline as declared (runner/audit/pipeline.py): every step it names exists, the scratch state
never shadows a DB table and is dropped whole, and the figures are written into the DB's tables once."""
from __future__ import annotations

import ast
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from kvreport.runner.audit import distributed, engine, formats, pipeline
from kvreport.runner.audit.steps import PerSlice, Py, Sql, Statement, describe
from kvreport.runner.audit.kv_pricing import Memory, Pricing
from kvreport.runner.core.connections import connect
from kvreport.runner.core.migrations import apply_steps

SQL = Path(str(resources.files("kvreport.runner.audit") / "sql"))


def _sql_names() -> list[str]:
    """Every sql/ file a step of any stage names ({shape} and {fmt} as every reader fills them)."""
    names = {s.name for stage in pipeline.STAGES.values() for s in stage if isinstance(s, (Sql, PerSlice))}
    shapes = {shape.sql for shape in formats.SHAPES.values()}
    out = []
    for name in names:
        if "{shape}" in name:
            out += [name.format(shape=s) for s in shapes]
        elif "{fmt}" in name:
            out += [name.format(fmt=f) for f in ("openai", "anthropic")]
        else:
            out.append(name)
    return sorted(out)


@pytest.mark.parametrize("name", _sql_names())
def test_every_sql_step_of_the_pipeline_is_a_file(name):
    assert (SQL / f"{name}.sql").is_file()


def test_every_stage_is_made_of_steps_with_described_conditions():
    """Each step is one of steps.py's kinds; its condition and Python function say what they are (--explain)."""
    for stage in pipeline.STAGES.values():
        for step in stage:
            assert isinstance(step, (Sql, PerSlice, Statement, Py))
            for fn in (step.when, getattr(step, "fn", None), getattr(step, "starts", None)):
                assert fn is None or describe(fn) != fn.__name__, fn


def _log(path: Path) -> Path:
    rec = {"session_id": "s", "timestamp": "2025-06-02T10:00:00Z",
           "request": {"messages": [{"role": "system", "content": "hi"}, {"role": "user", "content": "q"}]},
           "response": {"model": "gpt-4o", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}}
    path.write_text(json.dumps(rec) + "\n{broken\n")
    return path


def _scratch(con) -> set[str]:
    return {r[0] for r in con.execute(
        "SELECT table_name FROM duckdb_tables() WHERE database_name = 'temp' UNION ALL "
        "SELECT view_name FROM duckdb_views() WHERE database_name = 'temp' AND NOT internal UNION ALL "
        "SELECT function_name FROM duckdb_functions() WHERE database_name = 'temp'").fetchall()}


def test_the_scratch_state_shadows_no_db_table_and_is_dropped_whole(tmp_path):
    con = connect()
    try:
        apply_steps(con, 0)
        res = engine.run_audit(con, [_log(tmp_path / "a.jsonl")], engine.AuditOptions(workdir=str(tmp_path)),
                               audit_id="a", run_id=None, model="gpt2", pricing=Pricing(1.0, "formula", "t"),
                               memory=Memory(None, None))
        scratch = _scratch(con)
        db = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE database_name <> 'temp' "
                                        "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal "
                                        "AND database_name <> 'temp'").fetchall()}
        assert {"_calls", "_seg"} <= scratch and not scratch & db
        # the figures and the calls are in the DB's own tables already, in the open transaction; the calls are
        # read back from there, so the staged records are dropped
        assert "_staged" not in scratch
        assert con.execute("SELECT count(*) FROM token_audit WHERE audit_id = 'a'").fetchone()[0] == 1
        assert con.execute("SELECT count(*) FROM token_calls WHERE audit_id = 'a'").fetchone()[0] == 1
        engine.persist(con, res)
        assert con.execute("SELECT count(*) FROM token_calls WHERE audit_id = 'a'").fetchone()[0] == 1
        assert con.execute("SELECT line FROM token_rejects WHERE audit_id = 'a'").fetchall() == [(2,)]
        engine.cleanup(con)
        assert _scratch(con) == set()
    finally:
        con.close()


def test_a_failed_audit_leaves_nothing_in_the_db(tmp_path):
    con = connect()
    try:
        apply_steps(con, 0)
        engine.run_audit(con, [_log(tmp_path / "a.jsonl")], engine.AuditOptions(workdir=str(tmp_path)),
                         audit_id="a", run_id=None, model="gpt2", pricing=Pricing(1.0, "formula", "t"),
                         memory=Memory(None, None))
        engine.cleanup(con)  # as the command does when anything after run_audit fails: nothing was stored
        assert con.execute("SELECT count(*) FROM audits").fetchone()[0] == 0
        assert con.execute("SELECT count(*) FROM token_audit").fetchone()[0] == 0
    finally:
        con.close()


# SQL statement text: a keyword that starts a statement, or a setting being set.
_SQL_TEXT = re.compile(r"\b(SELECT|INSERT|COPY|CREATE|DESCRIBE|DROP|DELETE|UPDATE|PRAGMA|ATTACH|SET\s+\w+\s*=)\b")
_EXECUTE = {"execute", "executemany", "sql", "query"}  # DuckDB's ways to run SQL text on a connection


# The places that run SQL text: sqlfiles.run_sql (the statements of the .sql files), sqlfiles.run_text (the
# plan's inline statements, steps.Statement) and pipeline.drop_scratch (the DROP statements
# sql/setup/drop_scratch.sql writes).
_EXECUTORS = {("sqlfiles.py", "run_sql"), ("sqlfiles.py", "run_text"), ("pipeline.py", "drop_scratch")}


def _sql_text_in(path: Path) -> list[str]:
    """Calls that run SQL text, outside _EXECUTORS, and strings (docstrings aside) that are SQL, in one module."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = {id(node.body[0].value) for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    allowed = {id(inner) for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
               and (path.name, fn.name) in _EXECUTORS for inner in ast.walk(fn)}
    # a trivial statement written inline in the plan (steps.Statement), one per call
    allowed |= {id(node.args[0]) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
                and isinstance(node.func, ast.Name) and node.func.id == "Statement"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _EXECUTE \
                and id(node) not in allowed:
            found.append(f"{path.name} line {node.lineno}: .{node.func.attr}(...)")
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
              and id(node) not in allowed and _SQL_TEXT.search(node.value)):
            found.append(f"{path.name} line {node.lineno}: {node.value[:60]!r}")
    return found


@pytest.mark.parametrize("module", sorted(p.name for p in Path(distributed.__file__).parent.glob("*.py")))
def test_the_audit_holds_no_sql_text(module):
    """Every statement of the audit is a file of runner/audit/sql/ run through sqlfiles.run_sql (the Ray audit's
    too: sql/distributed/): no module runs SQL text of its own, and no string in one (docstrings aside) is SQL."""
    assert not _sql_text_in(Path(distributed.__file__).parent / module)


def test_the_sql_text_check_sees_an_inline_statement(tmp_path):
    """The check above finds what it looks for: an execute() of inline SQL in an audit-like module."""
    module = tmp_path / "engine.py"
    module.write_text('def begin(con):\n    """Open it."""\n    con.execute("BEGIN TRANSACTION")\n'
                      'def read(con):\n    return con.execute("SELECT 1")\n', encoding="utf-8")
    assert _sql_text_in(module) == ["engine.py line 3: .execute(...)", "engine.py line 5: .execute(...)",
                                    "engine.py line 5: 'SELECT 1'"]


def test_calls_that_cannot_be_stored_are_one_line_naming_the_db(tmp_path, monkeypatch):
    """One process stores the calls before the per-session figures (engine.stored_session_figures): a write that
    fails there (a full disk) is the same one line as a failed COMMIT, naming the user's DB file, never the new
    file's temporary name, and leaves no file behind."""
    import duckdb

    from conftest import quiet_audit
    from kvreport.runner.core.errors import UserError

    def full_disk(con, params):
        path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()").fetchone()[0]
        raise duckdb.IOException(f'IO Error: Could not write file "{path}": No space left on device')

    monkeypatch.setattr(pipeline, "STORE", (Py(full_disk),))
    db = tmp_path / "out" / "a.duckdb"
    db.parent.mkdir()
    with pytest.raises(UserError) as err:
        quiet_audit([_log(tmp_path / "a.jsonl")], db=db)
    message = str(err.value)
    assert message.startswith(f"{db}: cannot store the audit (") and message.endswith("nothing was stored")
    assert "No space left on device" in message and "kvreport-new" not in message and "\n" not in message
    assert list(db.parent.iterdir()) == []
