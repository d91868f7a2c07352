"""Golden snapshot: the site built from the committed fixture DB must equal tests/golden/site byte for
byte (plotly.min.js, Parquet files and the DB copy excepted, but listed in manifest.txt). A changed page
shows as a diff here; if the change is intended, regenerate and review `git diff tests/golden`:

    python scripts/make_golden.py --site-only   # templates/queries changed, same fixture DB
    python scripts/make_golden.py               # experiments changed: new fixture DB from real runs too

Outside CI a machine with other duckdb/plotly/jinja2 versions skips the comparison, saying why; in CI (the
CI environment variable set, as .ci/run does) it fails instead, and .ci/run installs the pinned versions.
"""
from __future__ import annotations

import difflib
import json
import os
import sys

import pytest

from conftest import GOLDEN, ROOT

sys.path.insert(0, str(ROOT / "scripts"))
import make_golden  # noqa: E402

REGENERATE = "if the change is intended, run `python scripts/make_golden.py --site-only` and review git diff tests/golden"


def _golden_versions() -> dict:
    path = GOLDEN.parent / "versions.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing: run `python scripts/make_golden.py`")
    return json.loads(path.read_text())


@pytest.mark.slow
def test_site_matches_golden_snapshot(built_site):
    want, have = _golden_versions(), make_golden.versions()
    if want != have:
        why = (f"golden snapshot was made with {want}, this environment has {have}; their output formats "
               "differ, so regenerate it here with `python scripts/make_golden.py --site-only` to compare")
        if os.environ.get("CI"):  # CI installs the pinned versions (.ci/run): a mismatch there is a failure
            pytest.fail(f"{why}. CI must install the versions in tests/golden/versions.json")
        pytest.skip(why)
    manifest = (GOLDEN.parent / "manifest.txt").read_text(encoding="utf-8").split()
    built = sorted(str(p.relative_to(built_site)) for p in built_site.rglob("*") if p.is_file())
    missing, extra = sorted(set(manifest) - set(built)), sorted(set(built) - set(manifest))
    assert not missing and not extra, f"files missing {missing}, unexpected {extra}; {REGENERATE}"

    changed = []
    for rel in built:
        if make_golden.excluded(rel):
            continue
        expected = (GOLDEN / rel).read_bytes()
        actual = (built_site / rel).read_bytes()
        if expected != actual:
            changed.append(rel)
    if changed:
        first = changed[0]
        diff = "".join(list(difflib.unified_diff(
            (GOLDEN / first).read_text(encoding="utf-8").splitlines(keepends=True),
            (built_site / first).read_text(encoding="utf-8").splitlines(keepends=True),
            f"golden/{first}", f"built/{first}", n=1))[:60])
        pytest.fail(f"{len(changed)} file(s) differ from the golden snapshot: {', '.join(changed[:10])}\n"
                    f"{diff}\n{REGENERATE}")


def test_golden_snapshot_has_no_excluded_or_stale_files():
    manifest = set((GOLDEN.parent / "manifest.txt").read_text(encoding="utf-8").split())
    stored = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*") if p.is_file()}
    assert stored == {m for m in manifest if not make_golden.excluded(m)}
    assert "assets/plotly.min.js" in manifest and "data/kvreport.duckdb" in manifest
    assert any(m.endswith(".html") for m in stored)
