"""Dollars per audited call (issue 18): provider conventions priced exactly, tiers and price periods,
override files, unknown models listed (never guessed), what-if savings and the self-hosted view.

Every expected cost is computed by hand in the comments from genai-prices' published rates (USD per
million tokens) or the override file's rates; the audit must reproduce it to the float.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from kvreport.runner.audit.kv_pricing import gpu_memory
from kvreport.runner.core.errors import UserError
from conftest import audit_and_open as _audit, audit_printed, quiet_audit

genai_prices = pytest.importorskip("genai_prices")


def _openai(session, ts, model, prompt, cached, completion) -> dict:
    return {"session_id": session, "timestamp": ts, "request": {"model": model},
            "response": {"object": "chat.completion", "model": model,
                         "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                   "prompt_tokens_details": {"cached_tokens": cached}}}}


def _anthropic(session, ts, model, inp, read, write, out) -> dict:
    return {"session_id": session, "timestamp": ts, "request": {"model": model},
            "response": {"type": "message", "model": model,
                         "usage": {"input_tokens": inp, "cache_read_input_tokens": read,
                                   "cache_creation_input_tokens": write, "output_tokens": out}}}


def _write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _calls(con) -> list[dict]:
    cur = con.execute("SELECT * FROM token_calls ORDER BY line")
    return [dict(zip([d[0] for d in cur.description], r)) for r in cur.fetchall()]


def _claim(con, claim_id: str) -> dict:
    """The token article's ledger row `claim_id`, as the site's query computes it from this DB (through the
    site's query runner, which binds the verdict words the query reads as parameters)."""
    from kvreport.analysis.queries import Queries

    (row,) = [r for r in Queries(con)("claim_token_article") if r["claim_id"] == claim_id]
    return row


def test_openai_cached_tokens_are_inside_input(tmp_path):
    log = _write(tmp_path / "openai.jsonl", [
        _openai("s1", "2025-06-02T10:00:00Z", "gpt-4o", 1000, 900, 20),
        _openai("s1", "2025-06-02T10:01:00Z", "gpt-4o", 2000, 0, 100),
    ])
    s, con = _audit(tmp_path, log)
    c1, c2 = _calls(con)
    # gpt-4o: $2.50 input, $1.25 cached input, $10 output per million tokens.
    # Call 1: prompt_tokens 1000 INCLUDES the 900 cached, so 100 are uncached.
    assert c1["input_cost_usd"] == pytest.approx(100 * 2.5e-6)         # 0.00025
    assert c1["cache_read_cost_usd"] == pytest.approx(900 * 1.25e-6)   # 0.001125
    assert c1["cache_write_cost_usd"] == 0                              # OpenAI has no cache writes
    assert c1["output_cost_usd"] == pytest.approx(20 * 10e-6)          # 0.0002
    assert c1["cost_usd"] == pytest.approx(0.001575)                    # the figure
    assert c1["price_source"].startswith("genai-prices") and c1["price_snapshot_date"] == s["price_snapshot_date"]
    # Call 2: nothing cached: 2000 x 2.5e-6 + 100 x 10e-6 = 0.005 + 0.001
    assert c2["cost_usd"] == pytest.approx(0.006)
    assert s["cost_usd"] == pytest.approx(0.007575)
    assert s["priced_calls"] == 2 and s["unpriced_calls"] == 0
    assert s["price_source"].startswith("genai-prices") and s["price_snapshot_date"] is not None
    (sess,) = con.execute("SELECT cost_usd, unpriced_calls FROM token_audit").fetchall()
    assert sess == (pytest.approx(0.007575), 0)
    (row,) = con.execute("SELECT input_usd_mtok, cache_read_usd_mtok, output_usd_mtok, n_calls, cost_usd, "
                         "matched_provider FROM token_prices").fetchall()
    assert row == (2.5, 1.25, 10.0, 2, pytest.approx(0.007575), "openai")


def test_anthropic_reads_and_writes_are_outside_input(tmp_path):
    log = _write(tmp_path / "anthropic.jsonl", [
        _anthropic("s1", "2025-06-02T10:00:00Z", "claude-sonnet-4", 100, 800, 100, 50),
    ])
    s, con = _audit(tmp_path, log)
    (c,) = _calls(con)
    assert c["input_tokens"] == 1000  # stored as OpenTelemetry: 100 + 800 read + 100 written
    # claude-sonnet-4: $3 input, $0.30 cache read, $3.75 cache write (5 min), $15 output per million.
    # Anthropic's input_tokens (100) EXCLUDES the reads and writes: it is the uncached part.
    assert c["input_cost_usd"] == pytest.approx(100 * 3e-6)             # 0.0003
    assert c["cache_read_cost_usd"] == pytest.approx(800 * 0.3e-6)      # 0.00024
    assert c["cache_write_cost_usd"] == pytest.approx(100 * 3.75e-6)    # 0.000375
    assert c["output_cost_usd"] == pytest.approx(50 * 15e-6)            # 0.00075
    assert c["cost_usd"] == pytest.approx(0.001665)                     # sum of the four
    assert s["cost_usd"] == pytest.approx(0.001665)
    assert s["cache_write_cost_usd"] == pytest.approx(0.000375)


def test_tier_above_200k_input_prices_every_token_higher(tmp_path):
    log = _write(tmp_path / "anthropic.jsonl", [
        # total input 100,000 + 100,000 = 200,000: not above the tier start, base rates
        _anthropic("s1", "2025-10-02T10:00:00Z", "claude-sonnet-4-5", 100_000, 100_000, 0, 1000),
        # total input 200,001: above 200k, every token at the tier's rates
        _anthropic("s2", "2025-10-02T10:00:00Z", "claude-sonnet-4-5", 100_001, 100_000, 0, 1000),
    ])
    _, con = _audit(tmp_path, log)
    base, tier = _calls(con)
    # base: 100,000 x $3 + 100,000 x $0.30 + 1,000 x $15 per million = 0.3 + 0.03 + 0.015
    assert base["cost_usd"] == pytest.approx(0.345)
    # tier: 100,001 x $6 + 100,000 x $0.60 + 1,000 x $22.50 per million = 0.600006 + 0.06 + 0.0225
    assert tier["cost_usd"] == pytest.approx(0.682506)
    assert con.execute("SELECT count(*) FROM token_prices").fetchone()[0] == 2  # one row per tier used


def test_time_of_day_price_periods(tmp_path):
    # No provider in a sessions log: genai-prices finds DeepSeek from the model name. Its discount hours
    # are 16:30-00:30 UTC (half price); the standard price applies 00:30-16:30.
    log = tmp_path / "sessions.jsonl"
    log.write_text(
        '{"session_id": "peak", "model": "deepseek-chat", "system_tokens": 1000, "user_tokens": 1000, '
        '"assistant_tokens": 1000, "cached_input_tokens": 1000, "first_seen": "2025-06-02T01:00:00Z"}\n'
        '{"session_id": "night", "model": "deepseek-chat", "system_tokens": 1000, "user_tokens": 1000, '
        '"assistant_tokens": 1000, "cached_input_tokens": 1000, "first_seen": "2025-06-02T17:00:00Z"}\n')
    _, con = _audit(tmp_path, log)
    cost = dict(con.execute("SELECT session_id, cost_usd FROM token_calls").fetchall())
    assert con.execute("SELECT sum(input_tokens) FROM token_calls").fetchone()[0] == 4000
    # peak: 1000 uncached x $0.27 + 1000 cached x $0.07 + 1000 output x $1.10 per million = 0.00144
    assert cost["peak"] == pytest.approx(0.00144)
    # discount: 1000 x $0.135 + 1000 x $0.035 + 1000 x $0.55 per million = 0.00072
    assert cost["night"] == pytest.approx(0.00072)


def test_override_file_toml(tmp_path):
    log = _write(tmp_path / "openai.jsonl", [
        _openai("s1", "2025-06-02T10:00:00Z", "my-llama", 1000, 600, 100),
        _openai("s1", "2025-06-02T10:01:00Z", "gpt-4o", 1000, 900, 20),
    ])
    prices = tmp_path / "prices.toml"
    prices.write_text('as_of = 2026-11-01\n'
                      '[[prices]]\nmodel = "gpt-4o"\nprovider = "openai"\ninput_mtok = 2.0\noutput_mtok = 8.0\n'
                      '[[prices]]\nmodel = "my-llama"\ninput_mtok = 0.5\ncache_read_mtok = 0.1\n'
                      'output_mtok = 2.0\nrequest_usd = 0.001\n')
    s, con = _audit(tmp_path, log, prices=prices)
    llama, gpt = _calls(con)
    # my-llama (self-hosted, only in the file): 400 uncached x $0.50 + 600 cached x $0.10 + 100 out x $2
    # per million, plus $0.001 per request = 0.0002 + 0.00006 + 0.0002 + 0.001
    assert llama["cost_usd"] == pytest.approx(0.00146)
    # gpt-4o at the negotiated rate, which beats genai-prices; no cache_read_mtok in the file, so cached
    # tokens cost as much as input: 100 x $2 + 900 x $2 + 20 x $8 per million = 0.0002 + 0.0018 + 0.00016
    assert gpt["cost_usd"] == pytest.approx(0.00216)
    assert s["unpriced_calls"] == 0
    assert s["price_snapshot_date"].isoformat() == "2026-11-01"
    assert set(s["price_source"].split("; ")) == {"override: prices.toml entry 1", "override: prices.toml entry 2"}


def test_override_file_json(tmp_path):
    log = _write(tmp_path / "openai.jsonl", [_openai("s1", "2025-06-02T10:00:00Z", "my-llama", 1000, 600, 100)])
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": [{"model": "MY-LLAMA", "input_mtok": 1, "cache_read_mtok": 0.25,
                                              "output_mtok": 4}]}))
    s, _ = _audit(tmp_path, log, prices=prices)
    # 400 x $1 + 600 x $0.25 + 100 x $4 per million = 0.0004 + 0.00015 + 0.0004 (model matched ignoring case)
    assert s["cost_usd"] == pytest.approx(0.00095)


def test_unknown_model_is_listed_not_priced(tmp_path):
    log = _write(tmp_path / "openai.jsonl", [
        _openai("s1", "2025-06-02T10:00:00Z", "acme-9000", 1000, 0, 10),
        _openai("s1", "2025-06-02T10:01:00Z", "acme-9000", 1000, 0, 10),
        _openai("s1", "2025-06-02T10:02:00Z", "gpt-4o", 2000, 0, 100),
    ])
    s, con = _audit(tmp_path, log)
    costs = [c["cost_usd"] for c in _calls(con)]
    assert costs[:2] == [None, None]                 # not zero, not a neighbour's price
    assert costs[2] == pytest.approx(0.006)
    assert s["cost_usd"] == pytest.approx(0.006)     # the total covers the priced calls only
    assert s["priced_calls"] == 1 and s["unpriced_calls"] == 2
    assert s["unpriced_models"] == "acme-9000 (openai): 2 calls"
    (row,) = con.execute("SELECT model, n_calls, input_usd_mtok, cost_usd, unknown_reason FROM token_prices "
                         "WHERE model = 'acme-9000'").fetchall()
    assert row[:4] == ("acme-9000", 2, None, None) and "no price" in row[4]
    # the session's cost is not the priced call's alone: it is unknown, and says how many calls are unpriced
    assert con.execute("SELECT cost_usd, unpriced_calls FROM token_audit WHERE session_id = 's1'").fetchone() \
        == (None, 2)


@pytest.mark.parametrize("name, text, expect", [
    ("p.toml", "[[prices]\nmodel = 1", "not valid TOML"),
    ("p.json", '{"prices": [', "not valid JSON (line 1"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": 1}]}', "prices[1] (x): output_mtok: missing"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": -1, "output_mtok": 1}]}', "input_mtok: expected a finite number"),
    # bombs and absurd values: one line each, never a traceback or gigabytes of memory
    ("p.json", '{"prices": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    ("p.toml", "prices = " + "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": ' + "9" * 5000 + ', "output_mtok": 1}]}', "thousands of digits"),
    ("p.toml", '[[prices]]\nmodel = "x"\ninput_mtok = ' + "9" * 5000 + "\noutput_mtok = 1", "thousands of digits"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": ' + "9" * 4000 + ', "output_mtok": 1}]}',
     "input_mtok: expected a finite number from 0 to 1e+06"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": 1e300, "output_mtok": 1}]}', "input_mtok: expected a finite"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": NaN, "output_mtok": 1}]}', "input_mtok: expected a finite"),
    ("p.toml", '[[prices]]\nmodel = "x"\ninput_mtok = 1\noutput_mtok = inf', "output_mtok: expected a finite"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": 1, "output_mtok": 1, "request_usd": 1e5}]}',
     "request_usd: expected a finite number from 0 to 10000"),
    ("p.json", '{"prices": [{"model": "' + "m" * 1000 + '", "input_mtok": 1, "output_mtok": 1}]}', "model: expected"),
    ("p.json", '{"prices": [' + " " * (5 * 2**20) + "]}", "larger than 4 MiB"),
    ("p.json", '{"prices": [{"model": "x", "input_mtok": 1, "output_mtok": 1, "cached_mtok": 1}]}',
     "prices[1]: unknown key(s) cached_mtok"),
    ("p.json", '{"prices": []}', "non-empty list"),
    ("p.yaml", "prices: []", "expected a .toml or .json file"),
])
def test_bad_prices_file_fails_before_anything_is_written(tmp_path, name, text, expect):
    log = _write(tmp_path / "openai.jsonl", [_openai("s1", "2025-06-02T10:00:00Z", "gpt-4o", 10, 0, 1)])
    bad = tmp_path / name
    bad.write_text(text)
    with pytest.raises(UserError) as exc:
        quiet_audit([log], tmp_path / "a.duckdb", prices=bad)
    assert str(bad) in str(exc.value) and expect in str(exc.value)
    assert not (tmp_path / "a.duckdb").exists()


def test_gpu_hour_price_turns_idle_kv_into_dollars(tmp_path):
    # Session a: one call at 00:00 holding 100 tokens; session b at 01:00 ends the log. a's KV sits
    # there for 3600 s, idle after the 300 s timeout: 3300 s x 100 tokens x 36,864 B/token (gpt2 at
    # 16-bit) = 12,165,120,000 idle byte-seconds.
    log = _write(tmp_path / "openai.jsonl", [
        _openai("a", "2025-06-02T00:00:00Z", "gpt-4o", 100, 0, 0),
        _openai("b", "2025-06-02T01:00:00Z", "gpt-4o", 100, 0, 0),
    ])
    s, con = _audit(tmp_path, log, gpu_hour_price=2.0, model="gpt2")
    assert s["idle_kv_byte_seconds"] == pytest.approx(12_165_120_000)
    # GPU-hours: the idle byte-seconds over the memory the sweep fits sessions into, per hour; x $2.
    assert s["idle_gpu_hours"] == pytest.approx(12_165_120_000 / s["memory_bytes"] / 3600)
    assert s["idle_cost_usd"] == pytest.approx(2.0 * s["idle_gpu_hours"])
    ttl = dict(con.execute("SELECT ttl_s, freed_cost_usd FROM token_ttl_sweep WHERE ttl_s IS NOT NULL").fetchall())
    # evicting 300 s after the last activity frees exactly the idle part
    assert ttl[300.0] == pytest.approx(s["idle_cost_usd"])
    assert con.execute("SELECT freed_cost_usd FROM token_ttl_sweep WHERE ttl_s IS NULL").fetchone()[0] == 0
    # The ledger's "double host capacity" row states that money beside the capacity multiplier.
    cap = _claim(con, "token-double-capacity")
    assert f"frees ${ttl[300.0]:,.2f} of GPU memory time at $2/GPU-hour" in cap["measured_value"]
    with pytest.raises(UserError, match="--gpu-hour-price"):
        quiet_audit([log], tmp_path / "b.duckdb", gpu_hour_price=-1.0)


def test_no_gpu_price_says_why(tmp_path):
    log = _write(tmp_path / "openai.jsonl", [_openai("a", "2025-06-02T00:00:00Z", "gpt-4o", 100, 0, 0)])
    s, _ = _audit(tmp_path, log, model="gpt2")
    assert s["idle_cost_usd"] is None and "--gpu-hour-price" in s["gpu_cost_reason"]
    assert s["whatif_achievable_usd"] is None and "message content" in s["whatif_reason"]


def _tokenizer(path: Path, text: str) -> Path:
    from kvreport.runner.audit.demo import _build_tokenizer  # the demo's word-level tokenizer

    _build_tokenizer([text]).save(str(path))
    return path


def test_whatif_prices_the_achievable_pcer_against_no_caching(tmp_path):
    # Two two-call sessions whose providers cached nothing; the first prompt of each has a time at the top.
    tok = _tokenizer(tmp_path / "tokenizer.json", "Time : 10 11 You are a helpful bot . hi again")
    oa, an = [], []
    for i, t in enumerate(["10", "11"]):
        msgs = [{"role": "user", "content": "hi again ."}] * (i + 1)
        oa.append(dict(_openai("w", 1748858400 + 60 * i, "gpt-4o", 30, 0, 3),
                       request={"model": "gpt-4o", "messages": [
                           {"role": "system", "content": f"Time : {t} . You are a helpful bot ."}, *msgs]}))
        an.append(dict(_anthropic("x", 1748858400 + 60 * i, "claude-sonnet-4", 30, 0, 0, 3),
                       request={"model": "claude-sonnet-4", "system": "You are a helpful bot .", "messages": msgs}))
    s, con = _audit(tmp_path, _write(tmp_path / "o.jsonl", oa), _write(tmp_path / "a.jsonl", an), tokenizer=str(tok))
    p = dict(con.execute("SELECT session_id, achievable_pcer FROM token_bloat").fetchall())
    q = dict(con.execute("SELECT session_id, stable_prefix_pcer FROM token_bloat").fetchall())
    assert 0 < p["w"] < q["w"] < 1 and 0 < p["x"] <= q["x"] < 1  # the time at the top costs w some reuse
    # No caching: w: 60 input x $2.50 + 6 output x $10 per million = 0.00021;
    #             x: 60 input x $3 + 6 output x $15 per million = 0.00027
    assert s["whatif_nocache_usd"] == pytest.approx(0.00021 + 0.00027)
    assert s["whatif_actual_usd"] == pytest.approx(0.00048)  # the log's calls cached nothing
    # At the achievable PCER p: p of the input read from the cache, the rest written to it (OpenAI: a
    # write costs input, $2.50; Anthropic: $3.75), output unchanged.
    w = p["w"] * 60 * 1.25e-6 + (1 - p["w"]) * 60 * 2.5e-6 + 6 * 10e-6
    x = p["x"] * 60 * 0.3e-6 + (1 - p["x"]) * 60 * 3.75e-6 + 6 * 15e-6
    assert s["whatif_achievable_usd"] == pytest.approx(w + x)
    ws = q["w"] * 60 * 1.25e-6 + (1 - q["w"]) * 60 * 2.5e-6 + 6 * 10e-6
    xs = q["x"] * 60 * 0.3e-6 + (1 - q["x"]) * 60 * 3.75e-6 + 6 * 15e-6
    assert s["whatif_stable_usd"] == pytest.approx(ws + xs)
    assert s["whatif_calls"] == 4 and s["whatif_reason"] is None
    assert s["whatif_achievable_pcer"] == pytest.approx((p["w"] * 60 + p["x"] * 60) / 120)
    # The ledger's verdict on "55% lower API bills" for this (non-demo) audit: the stable-prefix saving.
    bill = _claim(con, "token-api-bill")
    saving = 1 - (ws + xs) / 0.00048
    assert bill["verdict"] == ("confirmed" if saving >= 0.55 else "refuted")
    assert bill["measured_value"].startswith(f"{s['audit_id']}: {100 * saving:.0f}% lower than no caching")


@pytest.mark.slow
def test_audit_page_shows_costs_whatif_chart_and_snapshot_date(tmp_path, fixture_db):
    import shutil

    from kvreport.analysis.site import build_site

    db = tmp_path / "kvreport.duckdb"
    shutil.copyfile(fixture_db, db)  # real runs (the site needs them), migrated to this schema by the audit
    log = _write(tmp_path / "openai.jsonl", [
        _openai("s1", "2025-06-02T10:00:00Z", "gpt-4o", 1000, 900, 20),
        _openai("s1", "2025-06-02T10:01:00Z", "acme-9000", 1000, 0, 10),
    ])
    s = quiet_audit([log], db, gpu_hour_price=2.0)
    build_site(db, tmp_path / "site")
    page = (tmp_path / "site" / "audit.html").read_text()
    detail = page[page.index(f'id="detail-{s["audit_id"]}"'):]
    assert "$0.00158 for 1 priced calls" in detail            # 0.001575 at three significant digits
    assert "acme-9000 (openai): 1 calls" in detail              # listed, not priced
    assert f'audit-{s["audit_id"]}-cost-by-model' in detail       # the chart
    assert "What-if savings beside PCER" in detail and "not computed: no message content" in detail
    footer = page[page.index("<footer"):]
    assert f"snapshot of {s['price_snapshot_date']} ({s['audit_id']}" in footer
    claims = (tmp_path / "site" / "claims.html").read_text()
    assert "55% reduction in API bills" in claims


def test_cli_flags_reach_the_audit(tmp_path, capsys):
    from kvreport.runner.cli import main

    log = _write(tmp_path / "openai.jsonl", [_openai("s1", "2025-06-02T10:00:00Z", "my-llama", 1000, 600, 100)])
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": [{"model": "my-llama", "input_mtok": 1, "output_mtok": 4}]}))
    db = tmp_path / "a.duckdb"
    try:
        main(["audit", str(log), "--db", str(db), "--prices", str(prices), "--gpu-hour-price", "2.5"])
    except SystemExit as exc:
        assert exc.code in (0, None)
    out = capsys.readouterr().out
    # 1000 input (no cache rate in the file: cached tokens cost input) x $1 + 100 x $4 per million = 0.0014
    assert "cost: $0.0014 for 1 priced call(s) (prices: override: prices.json entry 1" in out
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT gpu_hour_price_usd FROM audits").fetchone()[0] == 2.5


def test_without_genai_prices_every_model_is_unpriced_with_the_reason(tmp_path, monkeypatch):
    import sys

    from kvreport.runner.audit import dollars as cost

    monkeypatch.setitem(sys.modules, "genai_prices", None)  # as on Python 3.10, where it cannot be installed
    cost.genai_info.cache_clear()
    try:
        log = _write(tmp_path / "openai.jsonl", [_openai("s1", "2025-06-02T10:00:00Z", "gpt-4o", 1000, 900, 20)])
        s, _ = _audit(tmp_path, log)
    finally:
        cost.genai_info.cache_clear()
    assert s["cost_usd"] is None and s["unpriced_calls"] == 1 and s["priced_calls"] == 0
    assert s["unpriced_models"] == "gpt-4o (openai): 1 calls"


def test_calls_differing_only_in_request_model_get_their_own_rates(tmp_path):
    # Same provider and response model; the override names the alias the first call requested.
    a = _openai("s1", "2025-06-02T10:00:00Z", "gpt-4o", 1000, 0, 0)
    a["request"]["model"] = "my-alias"
    log = _write(tmp_path / "openai.jsonl", [a, _openai("s1", "2025-06-02T10:01:00Z", "gpt-4o", 1000, 0, 0)])
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"prices": [{"model": "my-alias", "input_mtok": 1, "output_mtok": 1}]}))
    s, con = _audit(tmp_path, log, prices=prices)
    # 1000 x $1 per million (override) and 1000 x $2.50 per million (genai-prices' gpt-4o), each call once
    assert [c["cost_usd"] for c in _calls(con)] == [pytest.approx(0.001), pytest.approx(0.0025)]
    assert s["cost_usd"] == pytest.approx(0.0035) and s["priced_calls"] == 2


# Columns that differ between two audits of one log by design: when and how fast it ran, and its id.
_RUN_COLUMNS = {"audit_id", "created_at", "duration_s"}


def _figures(db: Path, audit_id: str) -> dict:
    """Every stored figure of one audit: its audits row and its per-session, leakage and TTL rows."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        out = {}
        for table, order in (("audits", "audit_id"), ("token_audit", "session_id"), ("token_leakage", "sample"),
                             ("token_ttl_sweep", "ttl_s NULLS FIRST")):
            cur = con.execute(f"SELECT * FROM {table} WHERE audit_id = ? ORDER BY {order}", [audit_id])
            cols = [d[0] for d in cur.description]
            out[table] = [{c: v for c, v in zip(cols, r) if c not in _RUN_COLUMNS} for r in cur.fetchall()]
        return out
    finally:
        con.close()


@pytest.mark.parametrize("model", ["tiny-gpt2", None])
def test_an_audit_is_priced_the_same_whatever_else_its_db_holds(tmp_path, model):
    # The fixture DB holds float32 CPU runs of tiny-gpt2 (a measured 1,024 B/token, twice the 16-bit figure)
    # with their free host memory (concurrent_capacity): neither may change any figure of this audit, priced by
    # a model or not priced at all.
    log = _write(tmp_path / "openai.jsonl", [
        _openai("a", "2025-06-02T00:00:00Z", "gpt-4o", 100, 0, 0),
        _openai("b", "2025-06-02T01:00:00Z", "gpt-4o", 100, 0, 0),
    ])
    crowded = tmp_path / "crowded.duckdb"
    shutil.copy(Path(__file__).parent / "fixtures" / "site" / "kvreport.duckdb", crowded)
    figures = []
    for db in (tmp_path / "fresh.duckdb", crowded):
        s = quiet_audit([log], db=db, model=model, gpu_hour_price=2.5)
        figures.append(_figures(db, s["audit_id"]))
    assert figures[0] == figures[1]
    summary = figures[0]["audits"][0]
    assert summary["memory_bytes"] == 80e9 and "H100 80GB" in summary["memory_source"]  # the default --gpu
    assert summary["leakage_index"] == pytest.approx(3300 / 3600)  # a idle after 300 s of its 3600; b at the end
    if model:
        assert summary["kv_bytes_per_token"] == 512 and summary["idle_cost_usd"] > 0  # 16-bit, not the DB's float32
    else:
        assert summary["kv_bytes_per_token"] is None and summary["idle_cost_usd"] is None


@pytest.mark.parametrize("gpu, gb", [("H100 80GB", 80), ("H200", 141), ("NVIDIA H100", 80), ("A100 40GB", 40),
                                     ("48GB", 48), ("rtx 4090 24 GB", 24)])
def test_gpu_memory_from_its_name(gpu, gb):
    assert gpu_memory(gpu).bytes == gb * 1e9


@pytest.mark.parametrize("gpu", ["A100", "H1000", "0GB", ""])
def test_a_gpu_without_a_known_size_is_a_user_error(gpu):
    with pytest.raises(UserError, match="--gpu"):
        gpu_memory(gpu)


def test_model_defaults_and_hints(tmp_path):
    log = _write(tmp_path / "openai.jsonl", [_openai("a", "2025-06-02T00:00:00Z", "gpt-4o", 100, 0, 0),
                                             _openai("b", "2025-06-02T01:00:00Z", "gpt-4o", 100, 0, 0)])
    s, said = audit_printed([log], db=tmp_path / "a.duckdb", gpu_hour_price=2.0)
    # no --model: KV not priced (no model guessed), said once before the audit, with how to price it
    assert [line for line in said if "--kv-bytes-per-token N" in line] == [said[0]] and "--model" in said[0]
    assert not any("gpt2" in line for line in said)
    assert s["kv_bytes_per_token"] is None and s["kv_bytes_source"] == "not priced" and s["model"] is None
    # nothing priced from KV bytes is stored: guardrail, byte-seconds, idle and TTL dollars, the bytes columns
    for key in ("kv_byte_seconds", "idle_kv_byte_seconds", "n_kv_warnings", "idle_gpu_hours", "idle_cost_usd",
                "session_kv_p50_bytes", "session_kv_max_bytes"):
        assert s[key] is None, key
    assert "not priced" in s["gpu_cost_reason"]
    # the ratios that need no bytes stay: PCER, SPOR's distribution, the leakage index (a share of token-seconds)
    assert s["overall_pcer"] == 0 and s["leakage_index"] == pytest.approx(3300 / 3600)
    con = duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True)
    stored = con.execute("""SELECT (SELECT count(*) FROM token_audit WHERE kv_cache_bytes IS NOT NULL
                                      OR kv_byte_seconds IS NOT NULL OR kv_warning IS NOT NULL),
                                   (SELECT count(*) FROM token_leakage WHERE held_bytes IS NOT NULL),
                                   (SELECT count(*) FROM token_ttl_sweep WHERE held_byte_seconds IS NOT NULL
                                      OR freed_cost_usd IS NOT NULL OR active_sessions_fit IS NOT NULL),
                                   (SELECT count(*) FROM token_ttl_sweep WHERE capacity_multiplier IS NOT NULL),
                                   (SELECT count(*) FROM token_leakage)""").fetchone()
    con.close()
    assert stored[:3] == (0, 0, 0) and stored[3] > 0 and stored[4] > 0
    # an API model's name: said to be one, with what --model takes instead, on one line
    with pytest.raises(UserError, match=r"gpt-4o: an API model .*open model.*--kv-bytes-per-token") as exc:
        quiet_audit([log], db=tmp_path / "b.duckdb", model="gpt-4o")
    assert "\n" not in str(exc.value) and exc.value.exit_code == 2
    s = quiet_audit([log], db=tmp_path / "c.duckdb", kv_bytes_per_token=131_072)
    assert s["kv_bytes_per_token"] == 131_072 and s["kv_bytes_source"] == "given"
    for bad in (dict(kv_bytes_per_token=0.0), dict(kv_bytes_per_token=1e3, model="gpt2")):
        with pytest.raises(UserError, match="--kv-bytes-per-token"):
            quiet_audit([log], db=tmp_path / "d.duckdb", **bad)
