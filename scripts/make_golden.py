"""Regenerate the site fixture DB and the golden snapshot the site tests compare against.

    python scripts/make_golden.py              # new fixture DB from real runs, then the expected site
    python scripts/make_golden.py --site-only  # keep the committed DB, rebuild only the expected site

The fixture DB holds three real `kvreport run --quick` runs on this machine: tiny-gpt2, tiny-llama-gqa
(grouped-query attention, so the claims and comparisons see both kinds), and tiny-gpt2 again (two runs
of one configuration, so the comparison page shows run-to-run changes). It is copied into a DuckDB file
with 16 KiB blocks so the committed file stays small (~0.3 MB instead of ~2 MB per run).

The expected output is every file the build writes except the binary or vendored ones (EXCLUDED); their
names are still listed in manifest.txt so a missing or extra file shows. versions.json records the library
versions whose output formats the snapshot depends on (the test skips, saying so, when they differ).
Review `git diff tests/golden` before committing: a changed page shows as a diff.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_DB = ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb"
GOLDEN = ROOT / "tests" / "golden"
EXCLUDED_NAMES = {"plotly.min.js", "kvreport.duckdb"}
EXCLUDED_SUFFIXES = {".parquet"}
RUNS = [("tiny-gpt2", "fixture"), ("tiny-llama-gqa", "fixture"), ("tiny-gpt2", "fixture, repeated")]


def excluded(rel: str) -> bool:
    name = rel.rsplit("/", 1)[-1]
    return name in EXCLUDED_NAMES or any(name.endswith(s) for s in EXCLUDED_SUFFIXES)


def versions() -> dict:
    import duckdb
    import jinja2
    import plotly

    return {"duckdb": duckdb.__version__, "plotly": plotly.__version__, "jinja2": jinja2.__version__}


def make_db(dest: Path) -> None:
    import duckdb

    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "runs.duckdb"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
        for model, label in RUNS:
            cmd = [sys.executable, "-m", "kvreport.runner", "run", "--model", model, "--quick", "--device", "cpu",
                   "--db", str(db), "--label", label]
            print("+", " ".join(cmd[2:]), flush=True)
            subprocess.run(cmd, check=True, env=env, cwd=ROOT)
        dest.parent.mkdir(parents=True, exist_ok=True)
        small = Path(tmp) / "small.duckdb"
        con = duckdb.connect()
        con.execute(f"ATTACH '{small}' AS small (BLOCK_SIZE 16384)")
        con.execute(f"ATTACH '{db}' AS src (READ_ONLY)")
        con.execute("COPY FROM DATABASE src TO small")
        con.execute("DETACH small")
        con.close()
        shutil.copyfile(small, dest)
    print(f"wrote {dest.relative_to(ROOT)} ({dest.stat().st_size:,} bytes)")


def make_site(db: Path, dest: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from kvreport.analysis.site import build_site

    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / "site"
        build_site(db, site)
        files = sorted(str(p.relative_to(site)) for p in site.rglob("*") if p.is_file())
        if dest.exists():
            shutil.rmtree(dest)
        (dest / "site").mkdir(parents=True)
        for rel in files:
            if not excluded(rel):
                target = dest / "site" / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(site / rel, target)
        (dest / "manifest.txt").write_text("\n".join(files) + "\n", encoding="utf-8")
        (dest / "versions.json").write_text(json.dumps(versions(), indent=2, sort_keys=True) + "\n",
                                            encoding="utf-8")
    print(f"wrote {dest.relative_to(ROOT)}/ ({len(files)} files in the site)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--site-only", action="store_true", help="keep the fixture DB; rebuild the expected site")
    args = ap.parse_args(argv)
    if not args.site_only:
        make_db(FIXTURE_DB)
    elif not FIXTURE_DB.is_file():
        print(f"{FIXTURE_DB} does not exist yet: run without --site-only first", file=sys.stderr)
        return 1
    make_site(FIXTURE_DB, GOLDEN)
    return 0


if __name__ == "__main__":
    sys.exit(main())
