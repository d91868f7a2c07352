"""A built wheel carries the templates, assets and SQL files (not only the Python modules)."""
import subprocess
import sys
import zipfile


def test_wheel_includes_templates_and_queries(tmp_path):
    root = __import__("pathlib").Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(root)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    (wheel,) = tmp_path.glob("kvreport-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    # Everything lives under the one `kvreport` namespace: no generic top-level names in site-packages.
    assert {n.split("/")[0] for n in names} == {"kvreport", next(n.split("/")[0] for n in names if ".dist-info/" in n)}
    assert "kvreport/templates/base.html" in names and "kvreport/templates/assets/site.css" in names
    assert "kvreport/analysis/queries/memory_formula_match.sql" in names
    assert "kvreport/runner/measure/experiments/kv_memory_v2.py" in names
    assert "kvreport/runner/core/schema/001_initial.sql" in names and "kvreport/runner/audit/sql/macros.sql" in names
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    assert "kvreport = kvreport.runner.cli:main" in zipfile.ZipFile(wheel).read(entry).decode()
