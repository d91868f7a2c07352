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

import os
from dataclasses import dataclass
from pathlib import Path

import duckdb

from .errors import UserError
from .connections import transaction
from .errors import shown
from .migrations import table_columns
from .scratch import db_file
from .store import current_schema_copy, Store
from .untrusted import quoted


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
    with db_file(into) as path:
        try:
            with Store(path) as out:
                for p in inputs:
                    with current_schema_copy(p) as current:
                        reports.append(_merge_one(out, Path(p), Path(current)))
        except duckdb.InterruptException:
            raise KeyboardInterrupt from None
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

    audits_added, audits_present = _audit_map(con)
    _replay_map(con)

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
    return MergeReport(source, n_added, n_src - n_added, audits_added, audits_present)


def _replay_map(con) -> None:
    """_replay_map (old, new): every replay this input brings (`kvreport replay`, no run). One the output holds
    (same id, creation time and sources) is not copied again; a taken id gets the next free replay-N."""
    con.execute("CREATE OR REPLACE TEMP TABLE _replay_cand AS "
                "SELECT s.replay_id AS old, s.replay_id AS cand, "
                "  row_number() OVER (ORDER BY s.created_at NULLS FIRST, s.replay_id) AS ord "
                "FROM src.main.replays s WHERE NOT EXISTS (SELECT 1 FROM main.replays o "
                "  WHERE o.replay_id = s.replay_id AND o.created_at IS NOT DISTINCT FROM s.created_at "
                "  AND o.sources IS NOT DISTINCT FROM s.sources)")
    _settle(con, "replay", "replays", "replay_id")


def _audit_map(con) -> tuple[int, int]:
    """_audit_map (old, new): the id each audit this input brings gets in the output. An audit inside a run
    follows its run (none when the run is already there), renamed run-<new run id>-... when named after its
    run; a standalone one the output holds (same id, creation time and sources) is not copied again. A taken
    id gets the next free audit-N. Returns (audits added, audits already present)."""
    con.execute(r"""CREATE OR REPLACE TEMP TABLE _audit_cand AS
        SELECT a.audit_id AS old,
               CASE WHEN a.run_id IS NOT NULL
                         AND TRY_CAST(regexp_extract(a.audit_id, '^run-([0-9]+)-.+$', 1) AS HUGEINT) = a.run_id
                    THEN 'run-' || m.new || '-' || regexp_extract(a.audit_id, '^run-[0-9]+-(.+)$', 1)
                    ELSE a.audit_id END AS cand,
               row_number() OVER (ORDER BY a.created_at NULLS FIRST, a.audit_id) AS ord
        FROM src.main.audits a LEFT JOIN _run_map m ON m.old = a.run_id
        WHERE CASE WHEN a.run_id IS NOT NULL THEN m.new IS NOT NULL
                   ELSE NOT EXISTS (SELECT 1 FROM main.audits o WHERE o.audit_id = a.audit_id
                                    AND o.created_at IS NOT DISTINCT FROM a.created_at
                                    AND o.sources IS NOT DISTINCT FROM a.sources) END""")
    _settle(con, "audit", "audits", "audit_id")
    n_src = con.execute("SELECT count(*) FROM src.main.audits").fetchone()[0]
    n_added = con.execute("SELECT count(*) FROM _audit_map").fetchone()[0]
    return n_added, n_src - n_added


def _settle(con, kind: str, table: str, key: str) -> None:
    """_<kind>_map (old, new) from _<kind>_cand (old, cand, ord): a candidate id free in the output and first
    of its name among the input's (by `ord`) is kept; each other one gets the next free `<kind>-N`, in `ord`
    order. Set-based: two statements however many ids there are. `kind`, `table` and `key` are this module's
    own names."""
    con.execute(f"CREATE OR REPLACE TEMP TABLE _{kind}_map AS SELECT old, cand AS new FROM "
                f"(SELECT *, row_number() OVER (PARTITION BY cand ORDER BY ord) AS k FROM _{kind}_cand) c "
                f"WHERE k = 1 AND NOT EXISTS (SELECT 1 FROM main.{table} o WHERE o.{key} = c.cand)")
    # The numbers 1..(ids taken + ids to place + 1) hold a free one for every id to place.
    con.execute(f"""INSERT INTO _{kind}_map
        WITH taken AS (SELECT {key} AS id FROM main.{table} UNION ALL SELECT new FROM _{kind}_map),
        todo AS (SELECT old, row_number() OVER (ORDER BY ord) AS i FROM _{kind}_cand
                 WHERE old NOT IN (SELECT old FROM _{kind}_map)),
        free AS (SELECT '{kind}-' || n AS id, row_number() OVER (ORDER BY n) AS i
                 FROM range(1, (SELECT count(*) FROM taken) + (SELECT count(*) FROM todo) + 2) r(n)
                 WHERE '{kind}-' || n NOT IN (SELECT id FROM taken))
        SELECT todo.old, free.id FROM todo JOIN free USING (i)""")
