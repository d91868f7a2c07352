"""The site, without a browser: every page and link, charts with tables and CSVs of exactly the rows
shown, determinism, strictness (a broken query, page, template, contract or link stops the build with a
message naming it), escaping of untrusted strings, and the comparison logic."""
from __future__ import annotations

import csv
import dataclasses
import hashlib
import html
import io
import json
import re
import shutil
import types
from pathlib import Path

import pytest

from kvreport.analysis import queries as queries_mod
from kvreport.analysis import site as site_mod
from kvreport.analysis import claims as claims_mod
from kvreport.analysis import regressions
from kvreport.analysis.site import BuildError, build_site, check_links
from kvreport.analysis.verdicts import VERDICTS
from conftest import PAYLOADS, write_payload_db
from htmldoc import Doc

MAX_PAGE_BYTES = 300_000  # "no HTML page over a few hundred KB"


def pages_of(site: Path) -> list[Path]:
    return sorted(site.glob("*.html"))


def read_csv(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))


# ---------------------------------------------------------------------------------------------------
# The built fixture site

def test_every_page_is_built_and_in_the_navigation(built_site):
    from kvreport.analysis.site import page_modules

    expected = {f"{m.PAGE.slug}.html" for m in page_modules()}
    assert {p.name for p in pages_of(built_site)} == expected
    for required in ("index.html", "memory.html", "claims.html", "compare.html", "data.html"):
        assert required in expected
    for page in pages_of(built_site):
        doc = Doc(page.read_text(encoding="utf-8"))
        nav = {a["href"] for a in doc.find("a") if a.get("href", "").endswith(".html")}
        assert expected <= nav | {"index.html"}, page.name
        assert len(doc.find("a", aria_current="page")) == 1, page.name
        assert doc.find("a", class_="skip", href="#main") and doc.find("main", id="main"), page.name
        assert doc.find("link", rel="icon", href="assets/favicon.svg"), page.name


def test_pages_are_small_and_plotly_is_loaded_only_where_a_chart_is_drawn(built_site):
    with_plots = set()
    for page in pages_of(built_site):
        text = page.read_text(encoding="utf-8")
        assert len(text.encode()) < MAX_PAGE_BYTES, f"{page.name}: {len(text.encode()):,} bytes"
        doc = Doc(text)
        srcs = [a.get("src") for a, _ in doc.scripts if a.get("src")]
        if doc.find("div", class_="plot"):
            with_plots.add(page.name)
            assert srcs == ["assets/plotly.min.js", "assets/site.js"], page.name
        else:  # 3.5 MB of plotly for a page without a chart is the slowest thing on it
            assert srcs == ["assets/site.js"], page.name
        # Every other script element is an inert JSON data block.
        assert all(a.get("type") == "application/json" for a, _ in doc.scripts if not a.get("src")), page.name
        assert "cdn" not in text.lower() and "https://" not in text, page.name
    assert {"claims.html", "data.html"}.isdisjoint(with_plots) and "memory.html" in with_plots
    assert (built_site / "assets" / "plotly.min.js").stat().st_size > 1_000_000


def test_all_local_links_resolve_and_are_relative(built_site):
    check_links(built_site, [p.name for p in pages_of(built_site)])  # raises naming the page and link
    for page in pages_of(built_site):
        for _tag, a in Doc(page.read_text(encoding="utf-8")).elements:
            for key in ("href", "src"):
                if key in a:
                    assert not a[key].startswith("/"), f"{page.name}: absolute {key} {a[key]}"


def test_every_chart_has_text_alternative_data_table_and_csv_of_its_points(built_site):
    n_charts = 0
    for page in pages_of(built_site):
        doc = Doc(page.read_text(encoding="utf-8"))
        blocks = {a["id"]: body for a, body in doc.scripts if a.get("type") == "application/json"}
        for plot in doc.find("div", class_="plot"):
            n_charts += 1
            cid = plot["id"]
            assert plot.get("role") == "img" and len(plot.get("aria-label", "")) > 20, cid
            spec = json.loads(blocks[plot["data-figure"]])
            assert spec["data"], f"{cid}: a rendered chart with no traces"
            points = sum(len(t.get("y") or t.get("x") or []) for t in spec["data"])
            rows = read_csv(built_site / "data" / f"{cid}.csv")
            assert len(rows) > 1, f"{cid}: empty CSV for a drawn chart"
            if rows[0][0] == "series":  # rows derived from the traces (pages may pass their own rows=)
                # Every plotted point plus one row per reference line (ceilings), nothing else.
                n_hlines = len(spec["layout"].get("shapes", []))
                assert len(rows) - 1 == points + n_hlines, cid
            assert doc.find("a", href=f"data/{cid}.csv"), f"{page.name}: no CSV link for {cid}"
            for axis in ("xaxis", "yaxis"):
                assert spec["layout"][axis]["title"]["text"], f"{cid}: {axis} has no title (units)"
    assert n_charts >= 3


def test_every_table_links_a_csv_of_exactly_its_rows(built_site):
    n_tables = 0
    for page in pages_of(built_site):
        text = page.read_text(encoding="utf-8")
        doc = Doc(text)
        for t in doc.tables:
            tid = t["attrs"].get("id")
            if not tid or not (built_site / "data" / f"{tid}.csv").exists():
                continue  # the claims tables share one ledger CSV (checked below)
            n_tables += 1
            rows = read_csv(built_site / "data" / f"{tid}.csv")
            shown = t["body_rows"]
            empty = f'id="{tid}"' in text and shown == 1 and len(rows) == 1
            assert len(rows) - 1 == shown or empty, f"{page.name} table {tid}: {shown} rows vs CSV {len(rows) - 1}"
            assert doc.find("a", href=f"data/{tid}.csv"), f"{page.name}: no link to data/{tid}.csv"
    assert n_tables >= 5


def test_numbers_are_right_aligned(built_site):
    text = (built_site / "memory.html").read_text(encoding="utf-8")
    doc = Doc(text)
    numeric = [a for t, a in doc.elements if t == "td" and "int" in a.get("class", "").split()]
    assert numeric and all("r" in a["class"].split() for a in numeric)
    css = (built_site / "assets" / "site.css").read_text(encoding="utf-8")
    assert "td.r, th.r { text-align: right;" in css


def test_overview_has_headlines_runs_environment_and_skips(built_site, fixture_db):
    import duckdb

    con = duckdb.connect(str(fixture_db), read_only=True)
    n_runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    n_skipped = con.execute("SELECT count(DISTINCT (experiment, reason)) FROM experiments "
                            "WHERE status <> 'ok'").fetchone()[0]
    bpt = con.execute("SELECT bytes_per_token FROM cache_tensors ORDER BY run_id DESC, seq_len DESC LIMIT 1").fetchone()[0]
    con.close()
    text = (built_site / "index.html").read_text(encoding="utf-8")
    doc = Doc(text)
    assert len(read_csv(built_site / "data" / "runs-environment.csv")) - 1 == n_runs
    assert len(read_csv(built_site / "data" / "runs-skipped.csv")) - 1 == n_skipped
    assert doc.find("a", class_="evidence", href="memory.html")
    assert f"{int(bpt):,}" in text  # the measured number, not a typed-in one
    header = read_csv(built_site / "data" / "runs-environment.csv")[0]
    assert header[:3] == ["run_id", "model", "dtype"]  # what a reader compares comes first
    for col in ("device_name", "torch_version", "transformers_version", "weights_random", "started_at"):
        assert col in header, col
    # Empty for every (CPU) run, so dropped rather than shown as a column of dashes.
    assert not {"gpu_memory_bytes", "driver_version", "cuda_version"} & set(header)


def test_overview_says_where_the_evidence_stands(built_site, fixture_db):
    import duckdb

    con = duckdb.connect(str(fixture_db), read_only=True)
    runs = con.execute("SELECT run_id, cpu, cpu_count, command_line FROM runs ORDER BY run_id").fetchall()
    con.close()
    text = (built_site / "index.html").read_text(encoding="utf-8")
    first_screen = text[text.index("<main"):text.index('id="findings"')]
    assert "Every run here is a CPU run." in first_screen and "GPU figures are pending" in first_screen
    assert "no run yet" in first_screen and f"{runs[0][2]} logical CPUs" in first_screen
    assert re.search(r"verdicts on \d+ claims</a></dt><dd>\d+</dd>", first_screen)  # N shown above it
    doc = Doc(text)
    for run_id, _cpu, _cpu_count, command in runs:  # a machine card per run, with the command to reproduce it
        assert doc.find("article", id=f"run-{run_id}"), run_id
        assert command in html.unescape(text)  # shell-quoted, so it may hold quotes (escaped in the HTML)
    # The demo audit's numbers come from generated traffic: labelled a demonstration, not a finding.
    demos = re.findall(r'<li class="demo">.*?</li>', text, re.S)
    assert any("audit.html" in d and "generated demo traffic" in d for d in demos)
    assert "identical logits" not in text


def test_overview_has_no_evidence_banner_claiming_cpu_only_for_a_gpu_run(small_db, tmp_path):
    import duckdb

    con = duckdb.connect(str(small_db))
    con.execute("UPDATE runs SET device_kind = 'cuda', gpu_name = 'NVIDIA H200', gpu_memory_bytes = 150e9")
    con.close()
    build_site(small_db, tmp_path / "out")
    text = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "Every run here is a CPU run." not in text and "<strong>GPU</strong>:" in text
    assert "NVIDIA H200" in text and "GPU memory" in text  # the column is back when a run fills it


def test_claims_ledger_unions_every_claim_query_with_valid_verdicts(built_site, fixture_db):
    rows = read_csv(built_site / "data" / "claims-ledger.csv")
    assert rows[0] == claims_mod.LEDGER_COLUMNS
    body = [dict(zip(rows[0], r)) for r in rows[1:]]
    assert {r["verdict"] for r in body} <= set(VERDICTS)
    ids = {r["claim_id"] for r in body}
    assert {"memory-formula", "memory-gpt2-arithmetic", "memory-all-lengths"} <= ids
    arithmetic = [r for r in body if r["claim_id"] == "memory-gpt2-arithmetic"]
    assert arithmetic == [dict(arithmetic[0], verdict="confirmed", run_id="")]
    assert "36,864" in arithmetic[0]["measured_value"]
    # The seed's formula uses attention heads: right for multi-head GPT-2, refuted by grouped-query attention.
    runs = {r[0]: r for r in read_csv(built_site / "data" / "runs.csv")[1:]}
    model_col = read_csv(built_site / "data" / "runs.csv")[0].index("model")
    formula = {runs[r["run_id"]][model_col]: r["verdict"] for r in body if r["claim_id"] == "memory-formula"}
    assert formula == {"tiny-gpt2": "confirmed", "tiny-llama-gqa": "refuted"}
    n_claim_queries = len(queries_mod.names_with_prefix("claim_"))
    assert len({r["claim_id"].split("-")[0] for r in body}) >= 1 and n_claim_queries >= 1
    text = (built_site / "claims.html").read_text(encoding="utf-8")
    for r in body:
        assert f'verdict-{site_mod.slugify(r["verdict"])}' in text


def test_cpu_runs_never_confirm_or_refute_a_gpu_measurement(built_site):
    """The fixture DB holds CPU runs only: every measurement claim made on a GPU waits for a GPU run, with
    the CPU figure kept as context; arithmetic claims keep their verdicts."""
    rows = read_csv(built_site / "data" / "claims-ledger.csv")
    body = [dict(zip(rows[0], r)) for r in rows[1:]]
    assert {r["device_kind"] for r in body if r["run_id"]} == {"cpu"}
    assert {r["basis"] for r in body} == {"arithmetic", "measurement"}
    gpu_claims = [r for r in body if r["basis"] == "measurement" and r["claim_on_gpu"] == "true" and r["run_id"]]
    assert len(gpu_claims) >= 10
    for r in gpu_claims:
        assert r["verdict"] == "not yet measured on a GPU", r
        assert r["measured_value"], r  # the CPU figure is still shown, as context
    assert not [r for r in body if r["run_id"] and r["basis"] == "measurement" and r["claim_on_gpu"] == "true"
                and r["verdict"] in ("confirmed", "refuted", "differs by hardware")]
    # The data's own verdict is kept beside it, so the rule visibly changed something.
    assert {r["data_verdict"] for r in gpu_claims} & {"confirmed", "refuted", "differs by hardware"}
    assert any(r["verdict"] in ("confirmed", "refuted") for r in body if r["basis"] == "arithmetic")
    text = (built_site / "claims.html").read_text(encoding="utf-8")
    n_claims = len({r["claim_id"] for r in body})
    assert re.search(rf"\d+ verdicts on {n_claims} claims", text)


def test_claims_legend_and_overview_use_the_one_definition_of_the_verdicts(built_site):
    from kvreport.analysis.verdicts import VERDICTS, Verdict

    text = (built_site / "claims.html").read_text(encoding="utf-8")
    legend = text[text.index('<dl class="verdict-legend">'):]
    assert re.findall(r'<dt><span class="verdict verdict-([^"]*)">([^<]*)</span></dt>', legend) == [
        (site_mod.slugify(v), v) for v in VERDICTS]
    assert f"<strong>{Verdict.GPU_PENDING}</strong>" in text


@pytest.mark.parametrize("device_kind, expected", [("cpu", "not yet measured on a GPU"), ("cuda", "confirmed")])
def test_the_verdict_rule_is_applied_to_every_claim_query(small_db, tmp_path, device_kind, expected):
    """A new claim query cannot bypass the rule: it applies to the union, not inside each file."""
    import duckdb

    con = duckdb.connect(str(small_db))
    con.execute("UPDATE runs SET device_kind = ?", [device_kind])
    con.close()
    queries = _queries_with(tmp_path, "claim_zz_test", "SELECT 'zz' AS claim_id, 'profiler seed' AS source, 'c' AS claim, "
                 "'1' AS seed_value, 'RTX 2070' AS seed_hardware, 'measurement' AS basis, true AS claim_on_gpu, "
                 "1 AS run_id, '2 GB/s' AS measured_value, 'confirmed' AS verdict, 'r' AS reasoning")
    build_site(small_db, tmp_path / "out", queries=queries)
    rows = read_csv(tmp_path / "out" / "data" / "claims-ledger.csv")
    zz = [dict(zip(rows[0], r)) for r in rows[1:] if r[0] == "zz"]
    assert [(r["verdict"], r["data_verdict"], r["device_kind"]) for r in zz] == [(expected, "confirmed", device_kind)]


def test_ledger_shows_the_latest_run_of_each_configuration(built_site, fixture_db):
    import re

    import duckdb

    con = duckdb.connect(str(fixture_db), read_only=True)
    latest = {r[0] for r in con.execute("SELECT max(run_id) FROM runs GROUP BY device_name, model, dtype").fetchall()}
    every = {r[0] for r in con.execute("SELECT run_id FROM runs").fetchall()}
    con.close()
    assert latest != every, "the fixture DB should repeat a configuration (scripts/make_golden.py does)"
    text = (built_site / "claims.html").read_text(encoding="utf-8")
    shown = {int(i) for cell in re.findall(r"<abbr title=\"[^\"]*\">([^<]*)</abbr>", text)
             for i in re.findall(r"run (\d+)", cell)}
    assert shown and shown <= latest
    ledger = read_csv(built_site / "data" / "claims-ledger.csv")
    col = ledger[0].index("run_id")
    assert {int(r[col]) for r in ledger[1:] if r[col]} - latest  # the CSV keeps the earlier runs


def test_compare_page_lists_every_run_with_metrics(built_site, fixture_db):
    rows = read_csv(built_site / "data" / "compare-side-by-side.csv")
    import duckdb

    con = duckdb.connect(str(fixture_db), read_only=True)
    runs = [r[0] for r in con.execute("SELECT run_id FROM runs ORDER BY run_id").fetchall()]
    con.close()
    assert rows[0][:3] == ["topic", "metric", "unit"]
    assert rows[0][3:] == [f"run_{i}" for i in runs]
    metrics = {r[1] for r in rows[1:]}
    assert "KV cache per token" in metrics


def test_data_page_links_db_and_every_table_as_csv_and_parquet(built_site, fixture_db):
    import duckdb

    from kvreport.runner.core.store import STORAGE_ONLY

    con = duckdb.connect(str(fixture_db), read_only=True)
    tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE table_name <> 'kvreport_meta' "
                                        "UNION ALL SELECT view_name FROM duckdb_views() WHERE NOT internal "
                                        "ORDER BY 1").fetchall()]
    assert "token_calls" in tables and set(STORAGE_ONLY) <= set(tables)
    tables = [t for t in tables if t not in STORAGE_ONLY]  # the token_calls view stands for them
    counts = {t: con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
    con.close()
    doc = Doc((built_site / "data.html").read_text(encoding="utf-8"))
    assert doc.find("a", href="data/kvreport.duckdb")
    for t in tables:
        assert doc.find("a", href=f"data/{t}.csv") and doc.find("a", href=f"data/{t}.parquet"), t
        assert len(read_csv(built_site / "data" / f"{t}.csv")) - 1 >= counts[t] * (counts[t] > 0), t
    assert (built_site / "data" / "kvreport.duckdb").read_bytes() == fixture_db.read_bytes()


# ---------------------------------------------------------------------------------------------------
# Determinism

def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.slow
def test_same_db_builds_a_byte_identical_site(built_site, fixture_db, tmp_path):
    db = tmp_path / "other-name.duckdb"
    shutil.copyfile(fixture_db, db)
    again = tmp_path / "again"
    build_site(db, again)
    assert _digest(again) == _digest(built_site)


def test_no_build_time_in_pages(tmp_path):
    """Every date on the site comes from the DB: with the DB's clock set to 2001, no other date appears."""
    import re

    import duckdb

    db = tmp_path / "old.duckdb"
    write_payload_db(db)
    con = duckdb.connect(str(db))
    con.execute("UPDATE runs SET started_at = TIMESTAMP '2001-02-03 04:05:06', "
                "finished_at = TIMESTAMP '2001-02-03 04:05:07'")
    con.execute("UPDATE experiments SET started_at = TIMESTAMP '2001-02-03 04:05:06', "
                "finished_at = TIMESTAMP '2001-02-03 04:05:07'")
    con.close()
    build_site(db, tmp_path / "out")
    dates = set()
    for f in (tmp_path / "out").rglob("*"):
        if f.suffix in (".html", ".csv", ".js", ".css") and f.name != "plotly.min.js":
            dates |= set(re.findall(r"\b(?:19|20)\d\d-\d\d-\d\d\b", f.read_text(encoding="utf-8")))
    assert dates == {"2001-02-03"}


# ---------------------------------------------------------------------------------------------------
# Strictness

@pytest.fixture
def small_db(tmp_path) -> Path:
    db = tmp_path / "small.duckdb"
    write_payload_db(db)
    return db


def _queries_with(tmp_path: Path, name: str, sql: str) -> Path:
    """A copy of analysis/queries/ with queries/<name>.sql added or replaced: the build's `queries` argument."""
    folder = tmp_path / "queries"
    shutil.copytree(Path(str(queries_mod.QUERY_DIR)), folder)
    (folder / f"{name}.sql").write_text(sql, encoding="utf-8")
    return folder


def _pages_with_data_context(context) -> list:
    """The site's page modules with the data page's context() replaced: the build's `pages` argument."""
    from kvreport.analysis.pages import data as data_page

    stand_in = types.ModuleType(data_page.__name__)
    stand_in.PAGE, stand_in.context = data_page.PAGE, context
    return [stand_in if m is data_page else m for m in site_mod.page_modules()]


def test_failing_query_stops_the_build_naming_it(small_db, tmp_path):
    queries = _queries_with(tmp_path, "runs", "SELECT no_such_column FROM runs")
    with pytest.raises(queries_mod.QueryError, match=rf"{re.escape(str(queries))}/runs\.sql failed: .*no_such_column"):
        build_site(small_db, tmp_path / "out", queries=queries)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("basis, verdict, message", [("arithmetic", "probably", "verdict 'probably'"),
                                                     ("vibes", "confirmed", "basis 'vibes'")])
def test_claim_query_breaking_the_contract_stops_the_build(small_db, tmp_path, basis, verdict, message):
    queries = _queries_with(tmp_path, "claim_zz_test", "SELECT 'x' AS claim_id, 'profiler seed' AS source, 'c' AS claim, "
                 f"'1' AS seed_value, 'gpu' AS seed_hardware, '{basis}' AS basis, false AS claim_on_gpu, "
                 f"NULL::INTEGER AS run_id, NULL AS measured_value, '{verdict}' AS verdict, 'r' AS reasoning")
    with pytest.raises(claims_mod.ClaimError, match=rf"claim_zz_test\.sql.*{message}"):
        build_site(small_db, tmp_path / "out", queries=queries)


def test_claim_query_with_wrong_columns_stops_the_build(small_db, tmp_path):
    queries = _queries_with(tmp_path, "claim_zz_test", "SELECT 'x' AS claim_id, 'confirmed' AS verdict")
    with pytest.raises(queries_mod.QueryError, match=r"claim_zz_test\.sql: missing column"):
        build_site(small_db, tmp_path / "out", queries=queries)


def test_headline_linking_a_missing_page_stops_the_build(small_db, tmp_path):
    queries = _queries_with(tmp_path, "headline_zz_test", "SELECT 1 AS run_id, 'f' AS finding, 1.0 AS value, "
                 "'B' AS unit, 'nowhere.html' AS page")
    with pytest.raises(queries_mod.QueryError, match=r"headline_zz_test\.sql: page 'nowhere\.html'"):
        build_site(small_db, tmp_path / "out", queries=queries)


def test_page_module_error_names_the_page(small_db, tmp_path):
    pages = _pages_with_data_context(lambda q, site: 1 / 0)
    with pytest.raises(BuildError, match=r"analysis/pages/data\.py: ZeroDivisionError"):
        build_site(small_db, tmp_path / "out", pages=pages)


def test_template_error_names_the_template_and_line(small_db, tmp_path):
    @dataclasses.dataclass
    class NoTables:  # the template reads `tables`, which this context lacks
        rows: int = 0

    pages = _pages_with_data_context(lambda q, site: NoTables())
    with pytest.raises(BuildError, match=r"templates/data\.html:\d+: UndefinedError"):
        build_site(small_db, tmp_path / "out", pages=pages)


def test_page_context_must_be_a_dataclass(small_db, tmp_path):
    pages = _pages_with_data_context(lambda q, site: {"tables": []})
    with pytest.raises(BuildError, match=r"analysis/pages/data\.py: context\(\) must return a dataclass"):
        build_site(small_db, tmp_path / "out", pages=pages)


@dataclasses.dataclass
class _DataPageWith:
    """The data page's context plus what a test adds to it (its template reads only `tables` and `answers`)."""
    tables: list
    answers: list
    extra: object = None


def _data_page_with(extra):
    from kvreport.analysis.pages import data as data_page

    return lambda q, site: _DataPageWith(**vars(data_page.context(q, site)), extra=extra)


def test_the_builder_writes_the_downloads_a_page_declares(small_db, tmp_path):
    """Templates only link downloads: the page module declares them in its context (at any depth) and the
    builder writes each as data/<name>.csv, whether or not a template mentions it."""
    from kvreport.analysis.site import Download, Table

    table = Table("zz-table", [{"k": "x", "v": 1.5}], [("k", "key", "text"), ("v", "value", "num")])
    out = tmp_path / "out"
    build_site(small_db, out, pages=_pages_with_data_context(
        _data_page_with({"nested": [Download("zz-rows", [{"a": 1, "b": "=cmd"}], ["b", "a"]), table]})))
    assert read_csv(out / "data" / "zz-rows.csv") == [["b", "a"], ["'=cmd", "1"]]
    assert read_csv(out / "data" / "zz-table.csv") == [["k", "v"], ["x", "1.5"]]


@pytest.mark.slow
def test_two_downloads_of_one_name_with_different_rows_stop_the_build(small_db, tmp_path):
    from kvreport.analysis.site import Download

    clash = [Download("zz", [{"a": 1}]), Download("zz", [{"a": 2}])]
    with pytest.raises(BuildError, match=r"data\.html: two different tables or charts both named 'zz'"):
        build_site(small_db, tmp_path / "out", pages=_pages_with_data_context(_data_page_with(clash)))
    with pytest.raises(BuildError, match=r"data\.html: CSV name '\.\./zz' must be"):
        build_site(small_db, tmp_path / "out", pages=_pages_with_data_context(_data_page_with(Download("../zz", []))))


@pytest.mark.slow
def test_failed_build_keeps_the_previous_site(small_db, tmp_path):
    out = tmp_path / "out"
    build_site(small_db, out)
    before = _digest(out)
    with pytest.raises(BuildError):
        build_site(small_db, out, pages=_pages_with_data_context(lambda q, site: 1 / 0))
    assert _digest(out) == before
    assert not list(tmp_path.glob(".kvreport-*"))


def test_broken_and_absolute_links_are_caught(tmp_path):
    (tmp_path / "a.html").write_text('<a href="b.html">b</a><a href="#top">t</a><p id="top"></p>')
    (tmp_path / "b.html").write_text('<a href="a.html#top">a</a>')
    check_links(tmp_path, ["a.html", "b.html"])
    (tmp_path / "b.html").write_text('<a href="missing.html">x</a>')
    with pytest.raises(BuildError, match=r"b\.html: link 'missing\.html'"):
        check_links(tmp_path, ["a.html", "b.html"])
    (tmp_path / "b.html").write_text('<a href="/a.html">x</a>')
    with pytest.raises(BuildError, match="absolute"):
        check_links(tmp_path, ["a.html", "b.html"])
    (tmp_path / "b.html").write_text('<a href="a.html#nope">x</a>')
    with pytest.raises(BuildError, match="no element with id 'nope'"):
        check_links(tmp_path, ["a.html", "b.html"])
    (tmp_path / "b.html").write_text('<p id="x"></p><p id="x"></p>')
    with pytest.raises(BuildError, match="more than one element with id x"):
        check_links(tmp_path, ["a.html", "b.html"])


def test_empty_db_gives_a_helpful_message(tmp_path):
    from kvreport.runner.core.store import Store

    db = tmp_path / "empty.duckdb"
    Store(db).close()
    with pytest.raises(BuildError, match="holds no runs yet; run `kvreport run"):
        build_site(db, tmp_path / "out")


def test_db_at_an_older_schema_builds_from_a_migrated_copy_and_stays_untouched(tmp_path):
    """The published reference DB of kvreport 0.1.0 was written at schema 1: the build reads a migrated copy
    (today's tables and columns), publishes the file as it was given, and never writes to it."""
    import duckdb

    db = tmp_path / "old.duckdb"
    shutil.copyfile(Path(__file__).parent / "fixtures" / "published_v1.duckdb", db)
    con = duckdb.connect(str(db), read_only=True)
    version = con.execute("SELECT value FROM kvreport_meta WHERE key = 'schema_version'").fetchone()[0]
    con.close()
    assert version == "1"
    before = db.read_bytes()
    build_site(db, tmp_path / "out")
    assert db.read_bytes() == before and not list(tmp_path.glob("old.duckdb.*"))  # no backup, no WAL
    header = read_csv(tmp_path / "out" / "data" / "runs.csv")[0]
    assert "kvreport_commit" in header  # a column added by schema 2, present in the migrated copy
    assert "published as it was recorded, at schema version 1" in (tmp_path / "out" / "data.html").read_text()


# ---------------------------------------------------------------------------------------------------
# Untrusted strings (the browser test checks the same site for execution)

def test_payloads_are_escaped_everywhere(payload_site):
    n_seen = 0
    for page in pages_of(payload_site):
        text = page.read_text(encoding="utf-8")
        doc = Doc(text)
        for tag, attrs in doc.elements:
            assert not any(k.startswith("on") for k in attrs), f"{page.name}: <{tag} {attrs}>"
            assert tag not in ("img", "svg", "iframe", "object") or attrs.get("src", "").startswith("assets/"), \
                f"{page.name}: injected <{tag}>"
        assert [a.get("src") for a, _ in doc.scripts if a.get("src")] in (["assets/plotly.min.js", "assets/site.js"],
                                                                           ["assets/site.js"])
        for attrs, body in doc.scripts:
            if attrs.get("type") == "application/json":
                assert "<" not in body and ">" not in body, page.name
                json.loads(body)
        n_seen += text.count("&lt;script&gt;window.__xss=1&lt;/script&gt;")
    assert n_seen > 0, "the payload never reached a page: the test would prove nothing"


def test_log_axes_get_readable_ticks_and_their_labels_land_on_their_lines():
    import plotly.graph_objects as go

    from kvreport.analysis import charts

    fig = go.Figure(go.Scatter(x=list(range(1, 40)), y=[3 * 10 ** (i / 8) for i in range(39)]))
    charts.reference_lines(fig, [(1000.0, "ceiling 1,000")])
    fig.update_yaxes(type="log")
    fig.update_xaxes(type="log")
    spec = json.loads(charts.make_chart("t", fig, "t", "t", "x", "y").figure_json)["layout"]
    # four decades of 1-2-5 would be 13 crowded ticks: a wide range keeps the powers of ten
    assert spec["yaxis"]["ticktext"] == ["10", "100", "1,000", "10,000", "100,000"]
    assert spec["xaxis"]["tickvals"][:3] == [1, 2, 5]
    # Plotly places annotations on a log axis in log10 units; the dashed line itself takes data units.
    assert spec["annotations"][0]["y"] == 3 and spec["shapes"][0]["y0"] == 1000


def test_crossover_highlights_measured_models_and_marks_context_limits(built_site):
    doc = Doc((built_site / "crossover.html").read_text(encoding="utf-8"))
    (spec,) = [json.loads(text) for a, text in doc.scripts if a.get("id") == "crossover-by-batch-data"]
    muted = [t for t in spec["data"] if t["line"]["color"] == "#94a3b8"]
    bright = [t for t in spec["data"] if t["line"]["color"] != "#94a3b8"]
    assert muted and bright and sum(t.get("showlegend", True) for t in muted) == 1  # one legend entry for the rest
    measured = {t["name"].split(" measured")[0] for t in bright if "measured" in t["name"]}
    assert measured and {t["name"].removesuffix(" (formula)") for t in bright if "formula" in t["name"]} <= measured
    limits = [a["text"] for a in spec["layout"]["annotations"] if "context limit" in a["text"]]
    assert sorted(x.split(" context")[0] for x in limits) == sorted(measured)
    # Past a model's context limit a point is hollow: one request can never get there.
    assert any("circle-open" in t["marker"]["symbol"] for t in spec["data"] if isinstance(t["marker"]["symbol"], list))


def test_plotly_text_is_entity_escaped_but_layout_tags_survive():
    from kvreport.analysis import charts

    c = charts.lines("t-x", {PAYLOADS["img"]: ([1, 2], [3, 4])}, "t", "alt", "x (u)", "y<br>(u)")
    spec = json.loads(c.figure_json)
    assert spec["data"][0]["name"] == "&lt;img src=x onerror=\"window.__xss=3\"&gt;"
    assert spec["layout"]["yaxis"]["title"]["text"] == "y<br>(u)"
    assert c.rows[0]["series"] == PAYLOADS["img"]  # the CSV keeps the raw value


def test_chart_ids_must_be_file_names():
    from kvreport.analysis import charts

    with pytest.raises(ValueError, match="chart id"):
        charts.lines("../evil", {"a": ([1], [1])}, "t", "alt", "x", "y")


# ---------------------------------------------------------------------------------------------------
# Comparison logic

def _m(run, value, better="lower", p25=None, p75=None, metric="step"):
    return {"topic": "decode", "metric": metric, "run_id": run, "value": value, "unit": "ms", "better": better,
            "p25": p25, "p75": p75, "summary": True, "page": None}


@pytest.mark.parametrize("base,new,better,expected", [
    (10.0, 11.5, "lower", "regression"),
    (10.0, 8.5, "lower", "improvement"),
    (10.0, 11.5, "higher", "improvement"),
    (10.0, 10.5, "lower", "unchanged"),
    (10.0, 12.0, None, "changed"),
])
def test_classify(base, new, better, expected):
    assert regressions.classify(_m(1, base, better), _m(2, new, better))[1] == expected


def test_overlapping_spreads_are_noise_not_regressions():
    change, verdict = regressions.classify(_m(1, 10.0, p25=8.0, p75=13.0), _m(2, 12.0, p25=11.0, p75=14.0))
    assert verdict == "within noise" and change == pytest.approx(0.2)
    assert regressions.classify(_m(1, 10.0, p25=9.5, p75=10.5), _m(2, 12.0, p25=11.5, p75=12.5))[1] == "regression"


def test_changes_pair_runs_of_one_configuration_only():
    runs = [{"run_id": 1, "device_name": "H200", "model": "gpt2", "dtype": "float16"},
            {"run_id": 2, "device_name": "A100", "model": "gpt2", "dtype": "float16"},
            {"run_id": 3, "device_name": "H200", "model": "gpt2", "dtype": "float16"}]
    metrics = [_m(1, 10.0), _m(2, 30.0), _m(3, 13.0)]
    found, n = regressions.changes(metrics, runs)
    assert n == 1
    assert [(c["base_run"], c["run_id"], c["verdict"]) for c in found] == [(1, 3, "regression")]


# ---------------------------------------------------------------------------------------------------
# `kvreport build` stays light: no torch (about 1.5 s of imports) on the way to a static site

def test_build_never_imports_torch(small_db, tmp_path):
    from conftest import imported_modules

    help_mods = imported_modules("build", "--help")
    built_mods = imported_modules("build", "--db", small_db, "--out", tmp_path / "out")
    assert (tmp_path / "out" / "index.html").is_file()
    assert "kvreport.analysis.site.build" in built_mods  # the parse found the builder's own imports
    for mods in (help_mods, built_mods):
        assert not {m for m in mods if m == "torch" or m.startswith("torch.")}


# --- answer-first tables, units, the chart bundle, pending pages (issue 27) -------------------------------
from kvreport.analysis.pages import index as index_page  # noqa: E402
from kvreport.analysis.site import formats  # noqa: E402
from kvreport.analysis.site.render import table_layout  # noqa: E402


def test_table_layout_leads_with_the_answer_and_says_constants_once():
    cols = [("run_id", "run", "int"), ("model", "model", "text"), ("triton", "triton", "gbs"),
            ("batch", "batch", "int"), ("bound", "bound", "text")]
    rows = [{"run_id": 1, "model": "gpt2", "triton": None, "batch": 1, "bound": "launch"},
            {"run_id": 1, "model": "gpt2", "triton": None, "batch": 4, "bound": "compute"}]
    lay = table_layout(rows, cols, answer="bound")
    assert [c[0] for c in lay["cols"]] == ["bound", "batch"]          # answer first; run, model constant
    assert [(c[0], v) for c, v in lay["constant"]] == [("run_id", 1), ("model", "gpt2")]
    assert [c[0] for c in lay["dropped"]] == ["triton"]               # empty in every row
    # `keep` holds a column in the table even when constant; one row has no constants to hoist
    assert [c[0] for c in table_layout(rows, cols, keep=["model"])["cols"]] == ["model", "batch", "bound"]
    assert table_layout(rows[:1], cols)["constant"] == []
    # a constant answer stays the answer: it is the table's point
    same = [dict(r, bound="launch") for r in rows]
    assert table_layout(same, cols, answer="bound")["cols"][0][0] == "bound"
    with pytest.raises(ValueError, match="answer column 'nope'"):
        table_layout(rows, cols, answer="nope")


def test_one_number_style_and_unit_ticks():
    assert formats.fmt_ratio(3.94) == "3.94×" and formats.fmt_ratio(12.34) == "12.3×"
    assert formats.fmt_ratio(None) == "–"
    ticks = formats.log_ticks([147456, 589824, 2064384, 151_000_000], "bytes")
    assert ticks["ticktext"] == ["100 KiB", "1 MiB", "10 MiB", "100 MiB"]
    assert ticks["tickvals"] == [100 * 1024, 2 ** 20, 10 * 2 ** 20, 100 * 2 ** 20]
    assert formats.log_ticks([64, 128, 256, 512])["ticktext"] == ["50", "100", "200", "500"]
    lin = formats.linear_byte_ticks([0, 3_000_000])
    assert lin["ticktext"] == ["0 B", "1 MiB", "2 MiB", "3 MiB"]


def test_chart_bundle_is_plotlys_basic_dist_at_the_pinned_version(built_site):
    """The vendored bundle is plotly.js-basic-dist-min at the plotly.js version the plotly package pins (its
    figure JSON is that version's), and every chart draws only the trace types the basic bundle has."""
    import plotly.offline

    head = (built_site / "assets" / "plotly.min.js").read_text(encoding="utf-8")[:200]
    assert "(basic - minified)" in head, head
    assert f"v{plotly.offline.get_plotlyjs_version()}" in head, head
    kinds = set()
    for page in pages_of(built_site):
        for attrs, text in Doc(page.read_text(encoding="utf-8")).scripts:
            if attrs.get("type") == "application/json":
                kinds |= {t.get("type", "scatter") for t in json.loads(text)["data"]}
    assert kinds and kinds <= {"bar", "pie", "scatter"}, kinds


def test_pages_without_data_are_marked_gpu_pending(built_site):
    """The fixture DB holds CPU runs only: Fragmentation is marked in every page's navigation and is one short
    paragraph, no tables; pages with data are not marked."""
    for page in pages_of(built_site):
        doc = Doc(page.read_text(encoding="utf-8"))
        pending = [a for a in doc.find("a") if "pending" in (a.get("class") or "")]
        assert [a["href"] for a in pending] == ["fragmentation.html"], page.name
    frag = Doc((built_site / "fragmentation.html").read_text(encoding="utf-8"))
    assert frag.tables == [] and frag.find(id="fragmentation-skipped")
    assert "GPU pending" in (built_site / "fragmentation.html").read_text(encoding="utf-8")


def test_tables_lead_with_their_answer(built_site):
    decode = Doc((built_site / "decode.html").read_text(encoding="utf-8")).table("decode-bound")
    assert decode["head"][0] == "bound"
    assert "device" not in decode["head"] and "device AMD EPYC" in decode["caption"]  # one device: said once
    inter = Doc((built_site / "interference.html").read_text(encoding="utf-8")).table("interference-summary")
    assert inter["head"][0] == "both / longer alone" and inter["rows"][0][0].endswith("×")


def test_every_page_opens_with_an_answer(built_site):
    """Each topic page with a headline opens with it: a number, then the sentence."""
    for slug in ("memory", "decode", "compaction", "crossover", "interference"):
        text = (built_site / f"{slug}.html").read_text(encoding="utf-8")
        main = text[text.index("<main"):]
        assert main.index('class="answer"') < main.index("</h1>") + 200, slug


def test_machine_card_says_shared_vm_from_what_the_run_recorded():
    run = {"os": "Linux 6.18.44-fc-v857", "cpu": "AMD EPYC"}
    assert index_page.shared_vm(run).startswith("shared VM, inferred from kernel release tag “fc”")
    assert index_page.shared_vm({"os": "Linux 6.8.0-1015-aws", "cpu": "Intel Xeon"}) is not None
    assert index_page.shared_vm({"os": "Linux 6.8.0-45-generic", "cpu": "AMD Ryzen 9 7950X"}) is None


def test_memory_headline_is_the_growth_per_token_with_constant_state_apart():
    """headline_memory.sql: bytes per token is the growth between the two longest lengths below every window;
    a hybrid's constant state is said apart (not spread over a short prefill), a windowed length is not used."""
    import duckdb

    from kvreport.analysis.queries import Queries
    from kvreport.runner.core.migrations import apply_steps

    con = duckdb.connect()
    apply_steps(con, 0)  # the DB's tables, which the query's macros (kv_growth) read
    con.execute("INSERT INTO runs (run_id, status, model, dtype) VALUES (1, 'ok', 'hybrid', 'bfloat16'), "
                "(2, 'ok', 'windowed', 'bfloat16')")
    memory = "INSERT INTO cache_tensors (run_id, seq_len, batch_size, cached_tokens, kv_bytes, bytes_per_token, match) "
    for seq in (16, 64):  # hybrid: 100 B/token + 5,000 B of state
        con.execute(memory + "VALUES (1, ?, 1, ?, ?, ?, true)", [seq, seq, 100 * seq + 5000, (100 * seq + 5000) / seq])
    for seq, held in ((16, 16), (64, 64), (200, 127)):  # windowed: 2 layers x 50 B/token, one capped at 127
        kv = 50 * seq + 50 * held
        con.execute(memory + "VALUES (2, ?, 1, ?, ?, ?, true)", [seq, seq, kv, kv / seq])
        con.execute("INSERT INTO kv_per_layer (run_id, seq_len, batch_size, cached_tokens) VALUES (2, ?, 1, ?), (2, ?, 1, ?)",
                    [seq, seq, seq, held])
    rows = {r["run_id"]: (r["finding"], r["value"]) for r in Queries(con)("headline_memory")}
    assert rows[1][1] == 100 and "grows by 100 bytes per token, on top of 5,000 bytes of constant state" in rows[1][0]
    assert rows[2][1] == 100 and "holds 100 bytes per token" in rows[2][0]


def _xover_row(run_id, model, tokens, bpt, heads=(None, None)):
    return {"run_id": run_id, "model": model, "source": "formula", "crossover_tokens": tokens,
            "kv_bytes_per_token": bpt, "weight_bytes": 10 ** 10, "n_heads": heads[0], "n_kv_heads": heads[1]}


def test_gqa_note_takes_head_counts_from_a_run_that_recorded_them():
    """The crossover page's GQA sentence ("llama-3.1-8b keeps 8 of 32"): the newest run's formula rows give the
    ratios, the newest row that recorded head counts gives the heads, and with none the note has no heads (it
    printed "None of None" when the newest run's rows lacked them)."""
    from kvreport.analysis.pages.crossover import gqa_note

    old = [_xover_row(1, "llama-2-7b", 25_705.0, 524_288.0, (32, 32)),
           _xover_row(1, "llama-3.1-8b", 122_532.0, 131_072.0, (32, 8))]
    new = [_xover_row(2, "llama-2-7b", 25_000.0, 524_288.0), _xover_row(2, "llama-3.1-8b", 120_000.0, 131_072.0)]
    note = gqa_note(old + new)
    assert note["gqa"]["run_id"] == 2 and note["tokens_ratio"] == 120_000.0 / 25_000.0
    assert (note["heads"]["n_kv_heads"], note["heads"]["n_heads"]) == (8, 32)
    assert gqa_note(new)["heads"] is None


