"""Write runner/core/schema/fresh.sql: the schema the steps build (runner/core/schema/NNN_*.sql applied to an
empty DB, in order), as one script a new DB is created from in one pass.

    python scripts/schema_snapshot.py           # after adding or changing a schema step

Creating a DB step by step replays every migration (ALTERs, back-fills of empty tables): 135 statements,
about half the time it takes to create and open a DB file. tests/test_store.py checks that fresh.sql is what
the steps build (tables, columns, defaults, constraints, views, the recorded version), so this script's
output is never trusted unchecked. Deterministic: tables, then views, each in name order.
"""
from __future__ import annotations

from pathlib import Path

from kvreport.runner.core.connections import connect
from kvreport.runner.core.migrations import apply_steps, FRESH_SCHEMA, schema_ddl, SCHEMA_VERSION

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    con = connect()
    apply_steps(con, 0)
    header = (f"-- kvreport schema version {SCHEMA_VERSION}: what runner/core/schema/NNN_*.sql build, in one pass.\n"
              "-- Written by scripts/schema_snapshot.py; never edit by hand: change a step, then run it again.\n"
              "-- A new DB is created from this file (migrations.create_schema); tests/test_store.py checks it "
              "against\n-- the steps. Existing DBs still migrate step by step.\n")
    out = ROOT / "runner" / "core" / "schema" / FRESH_SCHEMA
    out.write_text(header + "".join(f"\n{statement};\n" for statement in schema_ddl(con)), encoding="utf-8")
    print(f"wrote {out.relative_to(ROOT)} (schema version {SCHEMA_VERSION})")


if __name__ == "__main__":
    main()
