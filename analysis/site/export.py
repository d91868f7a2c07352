"""Data export: the DB and its tables (written by the store), the CSV of exactly the rows each chart and
table shows, and the static assets. One fixed text form per value, so the same DB writes the same bytes."""
from __future__ import annotations

import csv
import datetime as _dt
import io
import math
import re
import shutil
from decimal import Decimal
from importlib import resources
from pathlib import Path

from kvreport.runner.core.store import Store, csv_safe_text

from .formats import slugify
from .spec import BuildError

DATA_DIR = "data"
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


class ShownCsvs:
    """data/<name>.csv for every chart and table on the pages, filled while the pages render."""

    def __init__(self):
        self.files: dict[str, str] = {}  # name -> CSV text
        self.page: str = ""
        self._auto: dict[str, int] = {}

    def add(self, name: str, rows: list[dict], columns: list[str] | None = None) -> str:
        if not _NAME.match(name or ""):
            raise BuildError(f"{self.page or 'site'}: CSV name {name!r} must be letters, digits, '-' or '_'")
        text = rows_to_csv(rows, columns)
        if self.files.get(name, text) != text:
            raise BuildError(f"{self.page}.html: two different tables or charts both named {name!r}; "
                             "give one of them another id")
        self.files[name] = text
        return f"{DATA_DIR}/{name}.csv"

    def auto_name(self, hint: str = "") -> str:
        """A stable name for a table without an id: <page>-<caption slug>, numbered if repeated."""
        base = f"{self.page}-table" + (f"-{slugify(hint)}" if slugify(hint) else "")
        n = self._auto.get(base, 0) + 1
        self._auto[base] = n
        return base if n == 1 else f"{base}-{n}"

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
    with Store(current, read_only=True) as store:  # the store writes its own tables
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
