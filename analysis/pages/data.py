"""Raw data: the DuckDB file and every table as CSV and Parquet, with row counts and columns."""
from __future__ import annotations

from dataclasses import dataclass

from kvreport.analysis.site import PageSpec
from kvreport.runner.core.untrusted import database_name, quoted

PAGE = PageSpec(slug="data", title="Data", order=90)


@dataclass
class DataPage:
    tables: list[dict]  # table, rows, columns, n_columns, csv, parquet
    answers: list[dict]  # the page's opening number and sentence


def context(q, site) -> DataPage:
    tables = []
    db = quoted(database_name(q.con))
    for t in q("data_tables"):
        name = t["table_name"]
        if name not in site.tables:
            continue
        # The file's own table, not the shown rows (analysis/runs.py): its CSV holds every row. The name comes
        # from the DB's own catalog and is quoted as an identifier; nothing user-typed.
        n_rows = q.con.execute(f"SELECT count(*) FROM {db}.main.{quoted(name)}").fetchone()[0]
        tables.append({"table": name, "rows": n_rows, "columns": t["columns"], "n_columns": t["column_count"],
                       "csv": site.csv_files.get(name), "parquet": f"data/{name}.parquet"})
    n_rows = sum(t["rows"] for t in tables)
    answers = [{"run_id": None, "value": len(tables), "unit": "tables",
                "finding": f"{n_rows:,} rows in one DuckDB file (data/kvreport.duckdb), every table also as CSV "
                           "and Parquet: every number on the site is a query over them."}]
    return DataPage(tables=tables, answers=answers)
