"""A built wheel carries exactly the package's files: every module, template, asset, SQL and JSON file of the
three mapped folders, and nothing else (no stale file a leftover build/ folder would slip in)."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# folder in the checkout -> its path inside the wheel (pyproject's package-dir mapping)
MAPPED = {"runner": "kvreport/runner", "analysis": "kvreport/analysis", "templates": "kvreport/templates"}
PACKAGE_DATA = (".py", ".sql", ".html", ".css", ".js", ".svg", ".json")


def _expected() -> set[str]:
    out = set()
    for folder, inside in MAPPED.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in PACKAGE_DATA and "__pycache__" not in path.parts:
                out.add(f"{inside}/{path.relative_to(ROOT / folder).as_posix()}")
    return out


def test_the_wheel_holds_exactly_the_package_files(tmp_path):
    # Built from a copy without build/ or *.egg-info: setuptools would reuse a stale build/lib otherwise, and
    # the test would pass on files the checkout no longer has.
    src = tmp_path / "src"
    top_level = {".git", "build", "site", "tests", "benchmarks", "scripts"}

    def ignore(folder, names):
        skip = {n for n in names if n == "__pycache__" or n.endswith(".egg-info") or n.startswith(".venv")}
        return skip | (top_level & set(names) if Path(folder) == ROOT else set())

    shutil.copytree(ROOT, src, ignore=ignore)
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(src)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("kvreport-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # Everything lives under the one `kvreport` namespace: no generic top-level names in site-packages.
    dist_info = next(n.split("/")[0] for n in names if ".dist-info/" in n)
    assert {n.split("/")[0] for n in names} == {"kvreport", dist_info}
    files = {n for n in names if not n.startswith(dist_info)}
    expected = _expected()
    assert not expected - files, f"missing from the wheel: {sorted(expected - files)[:10]}"
    assert not files - expected, f"in the wheel but not in the checkout: {sorted(files - expected)[:10]}"
    for must in ("kvreport/runner/core/schema/001_initial.sql", "kvreport/runner/audit/sql/setup/macros.sql",
                 "kvreport/runner/core/catalogue/deepseek-v3.json", "kvreport/templates/assets/site.css",
                 "kvreport/runner/measure/experiments/cache_tensors.py"):
        assert must in files, must
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "kvreport = kvreport.runner.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
