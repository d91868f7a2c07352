"""`kvreport merge`: runs measured on different machines become one DB, so one site shows them side by side.

Each input is read at the current schema (an older file through a migrated temporary copy; the input is
never changed). Runs are identified across files by `runs.run_uid` (schema step 002): a run the output
already holds is not copied again. Every other run gets the next free run_id of the output, and every row
that carries its run_id follows it. Audits follow their run; a standalone audit (run_id NULL) is the same
audit when its id, creation time and sources agree, and otherwise gets a fresh id if its id is taken;
replays (`kvreport replay`, no run) the same way.
Everything one input brings is written in one transaction.
"""
from __future__ import annotations

import contextlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .errors import UserError
from .connections import transaction
from .errors import shown
from .migrations import table_columns
from .scratch import new_db_file
from .store import current_schema_copy, Store
from .untrusted import quoted

_DEMO_AUDIT = re.compile(r"^run-(\d+)-(.+)$")  # audits inside a run are named after its run_id


@dataclass
class MergeReport:
    source: Path
    runs_added: int
    runs_present: int
    audits_added: int
    audits_present: int


def merge(inputs: list[Path], into: Path) -> list[MergeReport]:
    if not inputs:
        raise UserError("give at least one DB file to merge")
    into = Path(into)
    for p in inputs:
        if os.path.realpath(p) == os.path.realpath(into):  # realpath: a symlink loop is no crash
            raise UserError(f"{p}: is also the --into file; merge into a new or another file")
    reports = []
    # Check every input first (exists, a kvreport DB, not newer): a bad one fails before OUT is touched.
    for p in inputs:
        with current_schema_copy(p):
            pass
    # A new output is written under a temporary name and linked into place only when every input is in:
    # a failure (a full disk) leaves no empty or partial file. An existing output takes each input in one
    # transaction.
    target = new_db_file(into) if not into.exists() else contextlib.nullcontext(into)
    with target as path:
        try:
            with Store(path) as out:
                for p in inputs:
                    with current_schema_copy(p) as current:
                        reports.append(_merge_one(out, Path(p), Path(current)))
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
        except UserError as exc:
            if path == into:
                raise
            raise type(exc)(str(exc).replace(str(path), str(into))) from None  # name the user's file, not ours
        except (duckdb.Error, OSError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise UserError(f"{shown(into)}: cannot write the merged DB ({first}); "
                            + ("nothing was written" if path != into else "the input being merged was not added")) \
                from None
    return reports


def _merge_one(out: Store, source: Path, current: Path) -> MergeReport:
    con = out.con
    con.execute("ATTACH ? AS src (READ_ONLY)", [str(current)])
    try:
        with transaction(con):
            report = _copy(con, source)
    finally:
        con.execute("DETACH src")
    return report


def _copy(con, source: Path) -> MergeReport:
    columns = table_columns(con)
    # Each run the output lacks (by run_uid) gets the next free run_id, in the input's order; mapped in SQL,
    # so a million runs are one statement, not a million.
    con.execute("CREATE OR REPLACE TEMP TABLE _run_map AS "
                "SELECT s.run_id AS old, CAST((SELECT coalesce(max(run_id), 0) FROM main.runs) "
                "  + row_number() OVER (ORDER BY s.run_id) AS INTEGER) AS new "
                "FROM src.main.runs s WHERE NOT EXISTS "
                "(SELECT 1 FROM main.runs m WHERE m.run_uid IS NOT DISTINCT FROM s.run_uid)")
    n_src = con.execute("SELECT count(*) FROM src.main.runs").fetchone()[0]
    n_added = con.execute("SELECT count(*) FROM _run_map").fetchone()[0]

    audit_map, audits_present = _audit_map(con)
    con.execute("CREATE OR REPLACE TEMP TABLE _audit_map (old VARCHAR, new VARCHAR)")
    if audit_map:
        con.executemany("INSERT INTO _audit_map VALUES (?, ?)", [list(pair) for pair in audit_map.items()])
    replay_map = _replay_map(con)
    con.execute("CREATE OR REPLACE TEMP TABLE _replay_map (old VARCHAR, new VARCHAR)")
    if replay_map:
        con.executemany("INSERT INTO _replay_map VALUES (?, ?)", [list(pair) for pair in replay_map.items()])

    for table, cols in sorted(columns.items()):
        if table == "kvreport_meta":
            continue
        # Table names come from the output's schema, quoted all the same; values never enter the SQL text.
        name = quoted(table)
        if "audit_id" in cols:
            run_expr = "(SELECT r.new FROM _run_map r WHERE r.old = t.run_id)" if "run_id" in cols else None
            repl = "a.new AS audit_id" + (f", {run_expr} AS run_id" if run_expr else "")
            con.execute(f"INSERT INTO main.{name} BY NAME SELECT t.* REPLACE ({repl}) "
                        f"FROM src.main.{name} t JOIN _audit_map a ON t.audit_id = a.old")
        elif "replay_id" in cols:
            con.execute(f"INSERT INTO main.{name} BY NAME SELECT t.* REPLACE (m.new AS replay_id) "
                        f"FROM src.main.{name} t JOIN _replay_map m ON t.replay_id = m.old")
        elif "run_id" in cols:
            con.execute(f"INSERT INTO main.{name} BY NAME SELECT t.* REPLACE (m.new AS run_id) "
                        f"FROM src.main.{name} t JOIN _run_map m ON t.run_id = m.old")
        else:
            raise UserError(f"{source}: table {table} has neither run_id nor audit_id; kvreport merge does "
                            "not know which rows belong to which run")
    return MergeReport(source, n_added, n_src - n_added, len(audit_map), audits_present)


def _replay_map(con) -> dict[str, str]:
    """old replay_id -> its id in the output for every replay this input brings (`kvreport replay`, no run):
    one the output holds (same id, creation time and sources) is not copied again; a taken id gets the
    next free replay-N."""
    taken = {r for (r,) in con.execute("SELECT replay_id FROM main.replays").fetchall()}
    same = set(con.execute("SELECT replay_id, created_at, sources FROM main.replays").fetchall())
    mapping = {}
    for replay_id, created_at, sources in con.execute(
            "SELECT replay_id, created_at, sources FROM src.main.replays ORDER BY created_at NULLS FIRST, replay_id"
    ).fetchall():
        if (replay_id, created_at, sources) in same:
            continue
        new, n = replay_id, 0
        while new in taken:
            n += 1
            new = f"replay-{n}"
        taken.add(new)
        mapping[replay_id] = new
    return mapping


def _audit_map(con) -> tuple[dict[str, str], int]:
    """old audit_id -> the id it gets in the output, for every audit this input brings."""
    taken = {a for (a,) in con.execute("SELECT audit_id FROM main.audits").fetchall()}
    same = {(a, c, s) for a, c, s in con.execute("SELECT audit_id, created_at, sources FROM main.audits").fetchall()}
    mapping, present = {}, 0
    rows = con.execute("SELECT a.audit_id, a.run_id, a.created_at, a.sources, m.new FROM src.main.audits a "
                       "LEFT JOIN _run_map m ON m.old = a.run_id "
                       "ORDER BY a.created_at NULLS FIRST, a.audit_id").fetchall()
    for audit_id, run_id, created_at, sources, new_run in rows:
        if run_id is not None:
            if new_run is None:
                present += 1  # its run is already in the output, and the audit with it
                continue
            m = _DEMO_AUDIT.match(audit_id)
            new = f"run-{new_run}-{m.group(2)}" if m and int(m.group(1)) == run_id else audit_id
        else:
            if (audit_id, created_at, sources) in same:
                present += 1
                continue
            new = audit_id
        if new in taken:
            n = 1
            while f"audit-{n}" in taken:
                n += 1
            new = f"audit-{n}"
        taken.add(new)
        mapping[audit_id] = new
    return mapping, present
