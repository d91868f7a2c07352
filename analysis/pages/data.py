"""Raw data: the DuckDB file and every table as CSV and Parquet."""
from __future__ import annotations

from analysis.site import PageSpec

PAGE = PageSpec(slug="data", title="Data", order=90)


def context(q, site) -> dict:
    counts = []
    for table in site.tables:
        counts.append({"table": table, "csv": site.csv_files.get(table),
                       "parquet": f"data/{table}.parquet"})
    return {"tables": counts}
