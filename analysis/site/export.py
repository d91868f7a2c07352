"""Data export: the DB and its tables (written by the store), the CSV of exactly the rows each chart and
table shows, and the static assets. One fixed text form per value, so the same DB writes the same bytes."""
from __future__ import annotations

import csv
import dataclasses
import datetime as _dt
import io
import math
import re
import shutil
from decimal import Decimal
from importlib import resources
from pathlib import Path

from kvreport.runner.core.csv_cells import csv_safe_text
from kvreport.runner.core.store import Store

from .. import charts  # the module, not its names: charts imports this package's formats and spec
from .spec import DATA_DIR, BuildError, Download, Table

DB_NAME = "kvreport.duckdb"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")


def csv_value(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        return repr(v)
    if isinstance(v, _dt.datetime):
        return v.isoformat(sep=" ")
    if isinstance(v, _dt.date):
        return v.isoformat()
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, (int, float)):
        return str(v)
    return csv_safe_text(str(v))  # a text cell never runs as a spreadsheet formula


def rows_to_csv(rows: list[dict], columns: list[str] | None = None) -> str:
    columns = list(columns) if columns is not None else (list(rows[0].keys()) if rows else [])
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(columns)
    for r in rows:
        w.writerow([csv_value(r.get(c)) for c in columns])
    return buf.getvalue()


def downloads_in(value) -> list[Download]:
    """Every download a page's context declares, in field order: its Download values, the rows of each Table
    and the points of each Chart with points, found in fields, lists, tuples and dict values at any depth
    (query rows hold only plain values and are not searched)."""
    if isinstance(value, Download):
        return [value]
    if isinstance(value, (Table, charts.Chart)):
        return [value.download] if value.download is not None else []
    if isinstance(value, dict):
        return [d for v in value.values() for d in downloads_in(v)]
    if isinstance(value, (list, tuple)):
        return [d for v in value for d in downloads_in(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [d for f in dataclasses.fields(value) for d in downloads_in(getattr(value, f.name))]
    return []


class ShownCsvs:
    """data/<name>.csv for every chart and table on the pages: the downloads each page's context declares."""

    def __init__(self):
        self.files: dict[str, str] = {}  # name -> CSV text

    def add(self, page: str, download: Download) -> None:
        name = download.name
        if not _NAME.match(name or ""):
            raise BuildError(f"{page}.html: CSV name {name!r} must be letters, digits, '-' or '_'")
        text = rows_to_csv(download.rows, download.columns)
        if self.files.get(name, text) != text:
            raise BuildError(f"{page}.html: two different tables or charts both named {name!r}; "
                             "give one of them another id")
        self.files[name] = text

    def write(self, out: Path, table_csvs: dict[str, str]) -> None:
        for name in sorted(self.files):
            if name in table_csvs:
                raise BuildError(f"a chart or table id {name!r} collides with the table {name}; rename it")
            (out / DATA_DIR / f"{name}.csv").write_text(self.files[name], encoding="utf-8")


def export_tables(db: Path, current: Path, out: Path) -> dict[str, str]:
    """The DB file `db` as given, and every table of `current` (`db` at the current schema) as CSV and
    Parquet, under out/data/; returns table -> CSV link. The file is published unchanged because a
    migrated copy is not byte-identical from one build to the next; kvreport migrates it on opening."""
    data = out / DATA_DIR
    data.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(db, data / DB_NAME)
    with Store(current, read_only=True, writable=[data]) as store:  # the store writes its own tables
        csvs = store.export_tables(data, "csv")
        store.export_tables(data, "parquet")
    return {p.stem: f"{DATA_DIR}/{p.name}" for p in csvs}


def copy_assets(out: Path) -> None:
    """templates/assets/ as is; plotly.min.js there is plotly's basic bundle (bar, pie, scatter), vendored."""
    assets = out / "assets"
    assets.mkdir(parents=True, exist_ok=True)
    src = resources.files("kvreport.templates") / "assets"
    for item in sorted(src.iterdir(), key=lambda p: p.name):
        if item.is_file():
            (assets / item.name).write_bytes(item.read_bytes())
