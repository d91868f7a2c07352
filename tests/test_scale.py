"""A DB of many runs builds a bounded site and gives bounded findings: the pages read the shown runs only
(analysis/runs.py), say so in one line, and every run stays in the CSV export. The million-run figures are
benchmarks/bench_scale.py's, not a test's."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT

from kvreport.analysis import runs as runs_mod

N_RUNS = 20_000
# Budgets, not measurements: a site of the shown runs is a few hundred KB a page and builds in a few hundred
# MB; one of 20,000 runs in full is megabytes a page and takes minutes (the child's timeout fails it).
PAGE_BUDGET_BYTES = 1_000_000
RSS_BUDGET_KB = 700 * 1024
TIMEOUT_S = 420

# kvreport's main() in a child, printing its peak RSS on the way out: VmHWM, its own memory's high-water mark.
# Not ru_maxrss: Linux carries that across exec, so a child of a big process (a pytest worker) reports the parent's.
_MEASURED = ("import sys\nfrom kvreport.runner.cli import main\ntry:\n    main(sys.argv[1:])\n"
             "finally:\n    print('maxrss_kb', next(int(line.split()[1]) for line in open('/proc/self/status') "
             "if line.startswith('VmHWM')), file=sys.stderr)")


def _kvreport(*args) -> tuple[subprocess.CompletedProcess, int]:
    r = subprocess.run([sys.executable, "-c", _MEASURED, *map(str, args)], capture_output=True, text=True,
                       timeout=TIMEOUT_S)
    rss = re.search(r"maxrss_kb (\d+)", r.stderr)
    assert r.returncode == 0 and rss, r.stderr[-2000:]
    return r, int(rss.group(1))


@pytest.fixture(scope="module")
def many_runs(tmp_path_factory):
    db = tmp_path_factory.mktemp("scale") / "many.duckdb"
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "make_big_db.py"), str(db), "--runs", str(N_RUNS),
                    "--measured", "500"], check=True, capture_output=True, timeout=TIMEOUT_S)
    return db


@pytest.mark.slow
def test_a_site_of_many_runs_shows_a_bounded_set_and_says_so(many_runs, tmp_path):
    out = tmp_path / "site"
    _, rss_kb = _kvreport("build", "--db", many_runs, "--out", out)
    assert rss_kb < RSS_BUDGET_KB
    pages = sorted(out.glob("*.html"))
    assert pages
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert page.stat().st_size < PAGE_BUDGET_BYTES, page.name
        note = re.search(r'<p class="note" id="not-shown">([^<]*)</p>', html)
        assert note and f"of {N_RUNS:,} runs" in note.group(1), page.name
    # The runs table lists the shown runs only; the runs CSV beside it holds every run.
    shown_rows = (out / "data" / "runs-environment.csv").read_text().count("\n") - 1
    assert 0 < shown_rows <= runs_mod.MAX_RUNS + runs_mod.MAX_CONFIGS + runs_mod.MAX_AUDITS
    assert (out / "data" / "runs.csv").read_text().count("\n") - 1 == N_RUNS
    assert f"{N_RUNS:,}" in (out / "data.html").read_text(encoding="utf-8")  # the Data page counts every row


@pytest.mark.slow
def test_findings_of_many_runs_are_bounded_and_any_run_can_be_asked_for(many_runs):
    r, rss_kb = _kvreport("findings", "--db", many_runs)
    assert rss_kb < RSS_BUDGET_KB
    runs = {int(m) for m in re.findall(r"^run (\d+) ", r.stdout, re.M)}
    assert runs and len(runs) <= runs_mod.MAX_RUNS + runs_mod.MAX_CONFIGS + runs_mod.MAX_AUDITS
    assert f"of {N_RUNS:,} runs" in r.stdout.splitlines()[-1]
    old = N_RUNS - 200  # measured (one of the newest --measured copies), yet not among the runs shown
    assert old not in runs
    one, _ = _kvreport("findings", "--db", many_runs, "--run", old)
    assert {int(m) for m in re.findall(r"^run (\d+) ", one.stdout, re.M)} == {old}
