"""Iteration 3: pressure (cap, ceiling, time, OOM path), the interference sanity bound, crossover
arithmetic, and the three pages with their verdicts. Tiny models only; no timing is asserted."""
from __future__ import annotations

import gc
import math
import re
import weakref
from html.parser import HTMLParser
from types import SimpleNamespace

import pytest
import torch

from kvreport.runner.measure.experiments import RunContext
from kvreport.runner.measure.experiments import kv_crossover_v3 as crossover
from kvreport.runner.measure.experiments import kv_interference_v3 as interference
from kvreport.runner.measure.experiments import kv_pressure_v3 as pressure
from kvreport.runner.measure.models import load_model

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def tiny():
    return load_model("tiny-gpt2", CPU, torch.float32)


def make_ctx(loaded, **kw) -> RunContext:
    return RunContext(run_id=1, device=CPU, dtype=torch.float32, loaded=loaded, quick=True, **kw)


def fake_cache(nbytes: int):
    """A cache the adapter reads (transformers 5.x layout) holding `nbytes` of K+V in one layer."""
    from transformers.cache_utils import DynamicLayer

    layer = DynamicLayer()  # the adapter reads only layer types it knows
    layer.keys = torch.zeros(nbytes // 8, dtype=torch.float32)
    layer.values = torch.zeros_like(layer.keys)
    return SimpleNamespace(layers=[layer])


# --- pressure -------------------------------------------------------------------------------------

def test_pressure_stops_at_the_cap_and_records_every_request(tiny, monkeypatch):
    monkeypatch.setenv("KVREPORT_PRESSURE_CAP", "3")
    with torch.inference_mode():
        result = pressure.run(make_ctx(tiny))
    rows, caps = result.tables["kv_pressure_v3"], result.tables["kv_capacity_v3"]
    assert [c["seq_len"] for c in caps] == [64, 128]
    for c in caps:
        mine = [r for r in rows if r["seq_len"] == c["seq_len"]]
        assert [r["n_requests"] for r in mine] == [1, 2, 3]
        assert c["stop_reason"] == "cap" and c["max_requests_measured"] == 3
        # tiny-gpt2 at float32: 2 (K,V) x 2 layers x 4 heads x 16 dims x 4 B = 1,024 B/token
        assert c["bytes_per_request"] == 1024 * c["seq_len"] == c["formula_bytes_per_request"]
        assert [r["kv_bytes"] for r in mine] == [n * c["bytes_per_request"] for n in (1, 2, 3)]
        assert all(r["reserved_bytes"] is None and r["memory_source"] == "tensor_storage" for r in mine)
        assert c["theoretical_max_requests"] == c["free_bytes"] // c["bytes_per_request"]
        assert c["capacity_tokens"] == c["kv_budget_bytes"] // 1024
        assert c["device_usable_after"] is True and "CPU" in c["notes"]
        assert c["prefill_batch"] == 1 and c["oom_child_status"] == "skipped"
    assert any(line.startswith("KV capacity ") and "max concurrency" in line for line in result.summary)


def test_pressure_stops_below_the_ceiling():
    memory = pressure.TensorMemory()
    adm = pressure.admit(lambda k=1: fake_cache(4096 * k), 16, cap=100, ceiling_bytes=10_000, deadline=math.inf,
                         memory=memory, estimate_bytes=4096)
    # 2 x 4096 fit; a third would reach 12,288 > 10,000: stop before it, not after
    assert adm.stop_reason == "ceiling" and len(adm.rows) == 2
    assert adm.rows[-1]["allocated_bytes"] == 8192 <= 10_000


def test_pressure_stops_at_the_time_budget():
    ticks = iter(range(100))
    adm = pressure.admit(lambda k=1: fake_cache(64 * k), 16, cap=100, ceiling_bytes=1 << 30, deadline=2.5,
                         memory=pressure.TensorMemory(), estimate_bytes=64, clock=lambda: next(ticks))
    assert adm.stop_reason == "time" and len(adm.rows) == 3  # clock 0, 1, 2 admit; 3 > 2.5 stops


def test_pressure_fills_in_batches_and_shrinks_the_last_one_to_the_ceiling():
    sizes = []

    def prefill(k=1):
        sizes.append(k)
        return fake_cache(4096 * k)

    adm = pressure.admit(prefill, 16, cap=1000, ceiling_bytes=30_000, deadline=math.inf,
                         memory=pressure.TensorMemory(), estimate_bytes=4096, batch=4)
    # 4 requests (16,384 B), then room for 3 more under 30,000 B, then none: measured to the ceiling
    assert sizes == [4, 3] and [r["n_requests"] for r in adm.rows] == [4, 7]
    assert adm.stop_reason == "ceiling" and adm.rows[-1]["kv_bytes"] == 7 * 4096 <= 30_000


def test_oom_child_is_skipped_on_cpu_and_refuses_a_cpu_device(tiny):
    from kvreport.runner.measure.child_process import ChildError, run_json_child

    status, note = pressure.oom_recovery(make_ctx(tiny))
    assert status == "skipped" and "OOM killer" in note
    with pytest.raises(ChildError, match="out-of-memory child: scenario child exited 3: .*needs a CUDA"):
        run_json_child("kvreport.runner.measure.oom_child", {"device": "cpu"}, "out-of-memory child", 120)


@pytest.mark.parametrize("error", [torch.cuda.OutOfMemoryError, MemoryError])
def test_pressure_out_of_memory_is_caught_recorded_and_freed(tiny, monkeypatch, error):
    made, alive_at_check = [], []
    real_check = pressure.device_usable

    def check_after_freeing(ctx):
        gc.collect()
        alive_at_check.append(sum(ref() is not None for ref in made if ref is not None))
        return real_check(ctx)

    def fake_make_prefill(ctx, seq_len):
        def prefill(k=1):
            if len(made) % 3 == 2:  # the third request of every length fails
                made.append(None)
                raise error("CUDA out of memory. Tried to allocate 20.00 MiB")
            cache = fake_cache(1024 * seq_len)
            made.append(weakref.ref(cache.layers[0].keys))
            return cache
        return prefill

    monkeypatch.setattr(pressure, "make_prefill", fake_make_prefill)
    monkeypatch.setattr(pressure, "device_usable", check_after_freeing)
    with torch.inference_mode():
        result = pressure.run(make_ctx(tiny))
    caps = result.tables["kv_capacity_v3"]
    assert [c["stop_reason"] for c in caps] == ["oom", "oom"]
    assert all(c["max_requests_measured"] == 2 for c in caps)
    assert all("out of memory after 2 requests" in c["notes"] and error.__name__ in c["notes"] for c in caps)
    assert all(c["device_usable_after"] is True for c in caps)  # the real model still runs afterwards
    assert alive_at_check == [0, 0]  # every admitted cache was freed before the device was checked


def test_pressure_rejects_a_bad_fraction(tiny, monkeypatch):
    from kvreport.runner.core.errors import UserError

    monkeypatch.setenv("KVREPORT_PRESSURE_FRACTION", "1.5")
    with pytest.raises(UserError, match="KVREPORT_PRESSURE_FRACTION"):
        pressure.run(make_ctx(tiny))


def test_capacity_reproduces_the_seed_arithmetic():
    bpr = 512 * 36_864  # GPT-2 at float16: 18 MiB per 512-token request
    assert 49 * bpr == 882 * 2 ** 20
    cap = pressure.capacity(512, bpr, free_bytes=7452 * 2 ** 20, ceiling_bytes=7452 * 2 ** 20, overhead_bytes=0)
    assert cap["theoretical_max_requests"] == 414  # what the seed's 414 needs: 7.28 GiB free, not 7.5
    assert pressure.capacity(512, bpr, int(7.5 * 2 ** 30), 0, 0)["theoretical_max_requests"] == 426
    assert cap["capacity_tokens"] == 414 * 512 and cap["max_concurrency"] == 414


# --- interference ---------------------------------------------------------------------------------

def _t(ms):
    return {"median_ms": ms, "p25_ms": ms * 0.98, "p75_ms": ms * 1.02}


def test_bound_flags_the_seed_pattern():
    # the seed: compaction alone 1.289 ms, compaction + decode 0.903 ms
    out = interference.check_bounds({"compact": _t(1.289), "decode": _t(0.5), "both": _t(0.903)},
                                    {"compact": 66_000_000, "decode": 1_000_000, "both": 67_000_000}, None)
    assert out["both"]["bound_violated"] and "compact alone" in out["both"]["bound_note"]
    assert out["both"]["bound_ms"] == pytest.approx(1.289)
    assert not out["compact"]["bound_violated"] and not out["decode"]["bound_violated"]


def test_bound_accepts_overlap_and_noise_but_not_the_roof():
    times = {"compact": _t(1.0), "decode": _t(2.0), "both": _t(1.97)}  # within 5% of perfect overlap
    ok = interference.check_bounds(times, {"compact": 10**6, "decode": 10**6, "both": 2 * 10**6}, roof_gbs=100.0)
    assert not any(v["bound_violated"] for v in ok.values())
    # each part alone moves 1 MB in 1 ms at a 1 GB/s roof: both at once cannot move 2 MB in 1 ms
    par = {"compact": _t(1.0), "decode": _t(1.0), "both": _t(1.0)}
    roof = interference.check_bounds(par, {"compact": 10**6, "decode": 10**6, "both": 2 * 10**6}, roof_gbs=1.0)
    assert roof["both"]["bound_violated"] and "bandwidth ceiling" in roof["both"]["bound_note"]
    assert roof["both"]["bound_ms"] == pytest.approx(2.0)
    assert not roof["compact"]["bound_violated"]  # alone modes get no roof bound
    # a part that beats the roof disproves it as a ceiling: its own rate (4 GB/s) is the ceiling then
    fast = {"compact": _t(1.0), "decode": _t(2.0), "both": _t(2.0)}
    beat = interference.check_bounds(fast, {"compact": 4 * 10**6, "decode": 0, "both": 4 * 10**6}, roof_gbs=1.0)
    assert not beat["both"]["bound_violated"]
    peak = interference.check_bounds(times, {"compact": 10**9, "decode": 10**6, "both": 10**9 + 10**6},
                                     roof_gbs=None, peak_gbs=100.0)  # 1 GB in 1 ms = 1,000 GB/s > peak
    assert peak["compact"]["bound_violated"] and "theoretical peak" in peak["compact"]["bound_note"]


def test_threaded_both_reraises_a_failed_compaction(tiny):
    def broken():
        raise RuntimeError("gather failed")

    variants, concurrency, _, _ = interference._variants(make_ctx(tiny), broken, lambda: None)
    assert concurrency == "threads"
    with pytest.raises(RuntimeError, match="gather failed"):
        variants["both"]()


def test_interference_runs_on_cpu_with_threads(tiny):
    ctx = make_ctx(tiny)
    ctx.shared.update(copy_roof_gbs=10.0, peak_gbs=None)  # skip the headline roof: not under test here
    with torch.inference_mode():
        result = interference.run(ctx)
    rows = {r["mode"]: r for r in result.tables["kv_interference_v3"]}
    assert set(rows) == {"compact", "decode", "both"}
    assert all(r["concurrency"] == "threads" and r["correct"] for r in rows.values())
    assert all(r["decode_mode"] == "static" for r in rows.values())  # the fastest mode the CPU has
    assert rows["both"]["bytes_moved"] == rows["compact"]["bytes_moved"] + rows["decode"]["bytes_moved"]
    assert rows["decode"]["decode_bytes"] >= rows["decode"]["decode_steps"] * tiny.step_weight_bytes()
    assert len({r["n"] for r in rows.values()}) == 1
    assert interference.MIN_REPEATS <= rows["both"]["n"] <= interference.DECODE["cpu", True][4]
    assert rows["both"]["bound_ms"] >= max(rows["compact"]["time_ms"], rows["decode"]["time_ms"])
    both = rows["both"]
    assert both["balance_ratio"] == pytest.approx(rows["compact"]["time_ms"] / rows["decode"]["time_ms"])
    assert both["balanced"] == (0.5 <= both["balance_ratio"] <= 2.0)
    assert both["decode_inflation"] == pytest.approx(both["decode_in_both_ms"] / rows["decode"]["time_ms"])
    assert both["compact_bw_lost"] == pytest.approx(1 - rows["compact"]["time_ms"] / both["compact_in_both_ms"])
    roofs = {(r["op"], r["bytes"]): r["gbs"] for r in result.tables["roof_curve"]}
    assert rows["compact"]["roof_gbs"] == roofs["copy", rows["compact"]["bytes_moved"]]  # same size, same op
    # decode and both mix reads and writes of different sizes: no same-size same-op roof, so no share of one
    assert all(rows[m]["roof_gbs"] is None and rows[m]["pct_of_roof"] is None for m in ("decode", "both"))


@pytest.mark.parametrize("ms_per_mib, decode_ms", [(1.0, 3.0), (0.25, 6.0), (5.0, 0.5)])
def test_compaction_is_sized_to_the_decode_part(tiny, ms_per_mib, decode_ms):
    """A gather whose time grows with its size (plus a fixed launch cost) is sized to land within the
    0.5-2x balance of the decode part, from any pilot size."""
    def fake_gather(w):
        return 0.02 + ms_per_mib * w.kv_bytes / 2**20

    work, ms = interference.balanced_workload(make_ctx(tiny), decode_ms, time_gather=fake_gather)
    assert ms == fake_gather(work)
    assert 0.5 <= ms / decode_ms <= 2.0


# --- crossover ------------------------------------------------------------------------------------

def test_gpt2_crossover_is_the_seeds_6751():
    rows = {r["batch_size"]: r for r in crossover.formula_rows("gpt2")}
    one = rows[1]
    assert one["weight_bytes"] == 124_439_808 * 2 and one["kv_bytes_per_token"] == 36_864
    assert math.floor(one["crossover_tokens"]) == 6751 and one["min_tokens_kv_exceeds"] == 6752
    assert one["exceeds_max_positions"] is True  # past GPT-2's 1,024-token context
    for b, r in rows.items():  # per request, it falls as 1/batch
        assert r["crossover_tokens"] * b == pytest.approx(one["crossover_tokens"])
    assert 16 * 512 > one["crossover_tokens"] > 13 * 512  # "KV > model at 16 x 512", but from 14 already


def test_gqa_needs_four_times_the_tokens():
    mha = {r["batch_size"]: r for r in crossover.formula_rows("llama-2-7b")}
    gqa = {r["batch_size"]: r for r in crossover.formula_rows("llama-3.1-8b")}
    assert mha[1]["kv_bytes_per_token"] == 512 * 1024 == 4 * gqa[1]["kv_bytes_per_token"]
    ratio = gqa[1]["crossover_tokens"] / mha[1]["crossover_tokens"]
    assert ratio == pytest.approx(4 * gqa[1]["weight_bytes"] / mha[1]["weight_bytes"])
    assert 25_000 < mha[1]["crossover_tokens"] < 26_000  # not "~388 x batch"
    assert mha[64]["crossover_tokens"] < mha[1]["crossover_tokens"]


def test_sliding_window_caps_the_crossover():
    rows = {r["batch_size"]: r for r in crossover.formula_rows("mistral-7b")}
    assert rows[1]["crossover_tokens"] is None and rows[1]["min_tokens_kv_exceeds"] is None
    assert rows[64]["crossover_tokens"] is not None and rows[64]["crossover_tokens"] < 4096
    first = min(b for b, r in rows.items() if r["crossover_tokens"] is not None)
    # a full window (4,095 tokens) per request must reach the weights at that batch and not the one below
    per_request = 4095 * rows[1]["kv_bytes_per_token"]
    assert first * per_request >= rows[1]["weight_bytes"] > (first // 2) * per_request


def test_crossover_min_tokens_brackets_the_weights():
    from kvreport.runner.core.kv_formula import kv_shape
    from kvreport.runner.measure.models import builtin_config

    shape = kv_shape(builtin_config("gpt2"))
    exact, first = crossover.crossover(shape, 2 * 12 * 64 * 2, 1_000_000, batch=3)
    assert first == math.ceil(1_000_000 / (3 * 36_864)) and exact == pytest.approx(1_000_000 / (3 * 36_864))


def test_crossover_run_measures_the_loaded_model(tiny):
    with torch.inference_mode():
        result = crossover.run(make_ctx(tiny))
    rows = result.tables["kv_crossover_v3"]
    measured = [r for r in rows if r["source"] == "measured"]
    assert {r["model"] for r in measured} == {"tiny-gpt2"} and len(measured) == 7
    assert measured[0]["kv_bytes_per_token"] == 1024 and measured[0]["weight_bytes"] == tiny.weight_bytes()
    from kvreport.runner.measure.models import builtin_names

    # every built-in (the catalogue's published configs and the hand-copied ones), on its model_facts curve
    assert {r["model"] for r in rows if r["source"] == "formula"} == set(builtin_names())


# --- pages ----------------------------------------------------------------------------------------

class _Cells(HTMLParser):
    """Text of the page and of every verdict cell, per table id."""

    def __init__(self):
        super().__init__()
        self.text, self.table, self.verdicts, self._in_verdict = [], None, {}, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table" and a.get("id"):
            self.table = a["id"]
        if tag == "span" and "verdict" in (a.get("class") or "").split():
            self._in_verdict = True

    def handle_endtag(self, tag):
        if tag == "span":
            self._in_verdict = False

    def handle_data(self, data):
        self.text.append(data)
        if self._in_verdict and data.strip():
            self.verdicts.setdefault(self.table, []).append(data.strip())


def _parse(path):
    p = _Cells()
    p.feed(path.read_text(encoding="utf-8"))
    p.all = re.sub(r"\s+", " ", " ".join(p.text))
    return p


class _Rows(HTMLParser):
    """The body rows of one table (by id) as lists of cell texts."""

    def __init__(self, table_id):
        super().__init__()
        self.table_id, self.rows, self._in, self._cell = table_id, [], False, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._in = dict(attrs).get("id") == self.table_id
        elif self._in and tag == "tr":
            self.rows.append([])
        elif self._in and tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if self._in and tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "table":
            self._in = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def claim_verdicts(out, page: str) -> dict:
    """{(claim_id, run id or None): verdict} of the claims table on a topic page, read from the HTML: the
    claim text of each row is mapped to its id through the site's own claims ledger CSV."""
    import csv

    with open(out / "data" / "claims-ledger.csv", newline="", encoding="utf-8") as f:
        ids = {r["claim"]: r["claim_id"] for r in csv.DictReader(f)}
    parser = _Rows(f"{page}-claims")
    parser.feed((out / f"{page}.html").read_text(encoding="utf-8"))
    header, *body = parser.rows
    col = {name: header.index(name) for name in ("claim", "run", "verdict")}
    got = {}
    for row in body:
        key = (ids[row[col["claim"]]], None if row[col["run"]] == "–" else int(row[col["run"]]))
        assert key not in got, key
        got[key] = row[col["verdict"]]
    return got


@pytest.fixture(scope="module")
def site(tmp_path_factory, tiny):
    """A real quick run of the three experiments, plus a synthetic run whose interference breaks the bound
    (the seed's pattern), written through the Store; then the site."""
    from kvreport.analysis.site import build_site
    from kvreport.runner.commands.run import execute
    from kvreport.runner.core.store import Store

    tmp = tmp_path_factory.mktemp("it3")
    db = tmp / "k.duckdb"
    execute("tiny-gpt2", "cpu", "auto", ["3"], True, db, echo=lambda *a, **k: None)
    with Store(db) as store:
        run_id = store.begin_run({"device_kind": "cuda", "device_name": "Synthetic GPU", "model": "gpt2",
                                  "dtype": "float16", "weights_random": True, "quick": True, "iterations": "3"})
        base = {"n": 20, "spread_wide": False, "concurrency": "cuda_streams", "roof_gbs": 400.0,
                "compact_bytes": 66_000_000, "decode_bytes": 1_000_000}
        rows = [{**base, "mode": m, "time_ms": t, "p25_ms": t * 0.99, "p75_ms": t * 1.01, "bytes_moved": b}
                for m, t, b in (("compact", 1.289, 66_000_000), ("decode", 0.4, 1_000_000),
                                ("both", 0.903, 67_000_000))]
        store.record_experiment(run_id, "kv_interference_v3", "ok", None, {"kv_interference_v3": rows})
        # GPU-shaped pressure: 60 GPT-2 requests of 512 tokens at float16, then an out-of-memory error
        bpr, base = 512 * 36_864, 300 * 2**20
        requests = [{"seq_len": 512, "n_requests": n, "kv_bytes": n * bpr, "allocated_bytes": base + n * bpr,
                     "reserved_bytes": base + n * bpr + 2**21, "allocated_delta_bytes": n * bpr,
                     "memory_source": "cuda_allocator"} for n in range(1, 61)]
        capacity = {"seq_len": 512, "max_requests_measured": 60, "bytes_per_request": bpr, "free_bytes": 7452 * 2**20,
                    "ceiling_bytes": int(0.9 * 7452 * 2**20), "stop_reason": "oom", "ceiling_fraction": 0.9,
                    "request_cap": 512, "kv_bytes": 60 * bpr, "allocated_delta_bytes": 60 * bpr,
                    "weight_bytes": 124_439_808 * 2, "prefill_overhead_bytes": 60 * 2**20,
                    "formula_bytes_per_request": bpr, "dtype_bytes": 2, "memory_source": "cuda_allocator",
                    "device_usable_after": True, "notes": "out of memory after 60 requests: OutOfMemoryError: x",
                    **pressure.capacity(512, bpr, 7452 * 2**20, int(0.9 * 7452 * 2**20), 60 * 2**20)}
        store.record_experiment(run_id, "kv_pressure_v3", "ok", None,
                                {"kv_pressure_v3": requests, "kv_capacity_v3": [capacity]})
        store.finish_run(run_id, "complete")
    out = tmp / "site"
    build_site(db, out)
    return out, run_id


def test_pages_build_with_charts_tables_and_cpu_notes(site):
    out, _ = site
    for slug in ("pressure", "interference", "crossover"):
        page = _parse(out / f"{slug}.html")
        assert "ran on the CPU" in page.all, slug
        assert f'{slug}-' in (out / f"{slug}.html").read_text()  # a chart id of this page
        assert "CSV" in page.all and "Method" in page.all


def test_pressure_page_shows_the_engine_line_and_verdicts(site):
    page = _parse(site[0] / "pressure.html")
    assert re.search(r"KV capacity [\d,]+ tokens; max concurrency [\d,.]+ requests at 128 tokens", page.all)
    assert "414 needs 7.28 GiB free" in page.all
    assert "414 x 512" in page.all and "Out-of-memory stops" in page.all
    out, gpu = site
    # The seed's 414 does not follow from its own 7.5 GB (inconsistent); 882 MB is exactly 49 x 18 MiB. The
    # GPU-shaped run: 49 requests fit (expected), 414 x 512 from 7,452 MiB free, 3.7x the weights.
    assert claim_verdicts(out, "pressure") == {
        ("pressure-49x512-bytes", None): "confirmed", ("pressure-49x512-bytes", gpu): "confirmed",
        ("pressure-49-fit", gpu): "expected", ("pressure-kv-vs-model", gpu): "confirmed",
        ("pressure-theoretical-max", None): "inconsistent", ("pressure-theoretical-max", gpu): "confirmed"}
    assert "allocated Δ, 512 tokens" in (site[0] / "pressure.html").read_text(encoding="utf-8")


def test_interference_page_flags_the_violation_instead_of_a_speed_up(site):
    out, run_id = site
    page = _parse(out / "interference.html")
    assert "Sanity bound violated" in page.all and f"{run_id}" in page.all
    # The seed's own figures are inconsistent; the synthetic GPU run violating the bound is not evidence;
    # the CPU run's threads are context only, pending a GPU.
    cpu = 1
    assert claim_verdicts(out, "interference") == {
        ("interference-both-faster", None): "inconsistent", ("interference-both-faster", cpu): "not yet measured on a GPU",
        ("interference-both-faster", run_id): "not measured",
        ("interference-compact-alone", cpu): "not yet measured on a GPU",
        ("interference-compact-alone", run_id): "differs by hardware"}
    index = _parse(out / "index.html")
    assert "flagged as a measurement error, not a speed-up" in index.all


def test_crossover_page_shows_gqa_and_the_388_verdict(site):
    page = _parse(site[0] / "crossover.html")
    # The formula rows (no run): GPT-2's 6,751 and 16 x 512 hold, "~388 x batch" for 7B does not; neither
    # run's model is GPT-2 or a 7B, so no run rows.
    assert claim_verdicts(site[0], "crossover") == {
        ("crossover-gpt2-one-request", None): "confirmed", ("crossover-gpt2-16x512", None): "confirmed",
        ("crossover-7b-388", None): "refuted"}
    assert "25,705" in page.all and "122,532" in page.all
    assert "llama-3.1-8b keeps 8 of 32" in page.all
