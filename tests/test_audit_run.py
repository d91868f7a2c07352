"""The audit inside `kvreport run` (demo workload, prefix-reuse experiment) and the audit page."""
from __future__ import annotations

import copy
import re
from pathlib import Path

import duckdb
import pytest
import torch

from conftest import quiet_audit, quiet_run
from htmldoc import Doc

FIX = Path(__file__).parent / "fixtures" / "audit"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    from kvreport.analysis.site import build_site

    tmp = tmp_path_factory.mktemp("audit-site")
    db = tmp / "k.duckdb"
    quiet_run(db, dtype="auto", groups="traffic")
    quiet_audit([FIX / "xss.jsonl"], db)
    build_site(db, tmp / "site")
    return db, tmp / "site"


@pytest.mark.slow
def test_demo_audit_is_stored_with_the_run(site):
    db, _ = site
    con = duckdb.connect(str(db), read_only=True)
    (a,) = con.execute("SELECT audit_id, kv_bytes_source, kv_bytes_per_token, n_rejects, overall_spor, "
                       "leakage_index, sources FROM audits WHERE run_id = 1").fetchall()
    # tiny-gpt2 caches 1,024 B/token at float32 on the CPU; traffic is priced as served, at 16 bits.
    assert a[0] == "run-1-demo" and a[1] == "measured" and a[2] == 512 and a[3] == 0
    detail = con.execute("SELECT kv_bytes_detail FROM audits WHERE run_id = 1").fetchone()[0]
    assert "1,024 B/token" in detail and "priced at 16 bits" in detail
    assert 0 < a[4] < 1 and 0 < a[5] < 1  # SPOR counted with the demo's tokenizer; some sessions idle
    assert "/tmp" not in a[6] and "demo/openai_chat.jsonl" in a[6]
    seed = dict(con.execute("SELECT session_id, pcer FROM token_audit WHERE run_id = 1 AND session_id LIKE 'sess-%'").fetchall())
    assert seed["sess-003"] == pytest.approx(8000 / 13500)
    # The generated sessions with a timestamp at the top of the system prompt are found by the bloat analysis.
    n = con.execute("SELECT count(*) FROM token_bloat WHERE run_id = 1 AND diverge_in = 'system prompt' "
                    "AND diverge_context LIKE '%Current time:%'").fetchone()[0]
    assert n >= 3
    status = dict(con.execute("SELECT experiment, status FROM experiments").fetchall())
    assert status == {"audit_demo": "ok", "prefix_reuse": "ok"}


def test_demo_workload_is_deterministic(tmp_path):
    from kvreport.runner.audit.demo import write_demo

    a, _ = write_demo(tmp_path / "a")
    b, _ = write_demo(tmp_path / "b")
    assert [p.read_bytes() for p in a] == [p.read_bytes() for p in b]


def test_prefix_reuse_is_exact_and_computes_fewer_tokens(site):
    db, _ = site
    con = duckdb.connect(str(db), read_only=True)
    rows = {r[0]: r for r in con.execute(
        "SELECT mode, prompt_tokens, cached_tokens, computed_tokens, logits_match, n, system_tokens, user_tokens "
        "FROM prefix_reuse").fetchall()}
    full, sysp, sess = rows["recompute"], rows["system_prefix"], rows["session_prefix"]
    assert full[2] == 0 and full[3] == full[1]
    assert sysp[2] == sysp[6] and sysp[2] + sysp[3] == full[1]
    assert sess[3] == sess[7] and sess[2] + sess[3] == full[1]  # only the new user message is computed
    assert all(r[4] for r in rows.values()) and all(r[5] >= 3 for r in rows.values())
    before, after = con.execute("SELECT kv_bytes_held, kv_bytes_expected, freed_bytes, sessions_held "
                                "FROM prefix_reuse_evict ORDER BY phase = 'after_evict'").fetchall()
    assert before[0] == before[1]  # the caches hold exactly the formula's bytes
    assert after[2] == before[0] - after[0] and after[3] == before[3] - 1


def test_prefix_reuse_detects_a_wrong_reuse():
    """The exactness check can fail: a prefix cache from other tokens gives different logits."""
    from kvreport.runner.measure.experiments.prefix_reuse import logits_agree
    from kvreport.runner.measure.kv_cache import forward_with_cache
    from kvreport.runner.measure.models import load_model

    m = load_model("tiny-gpt2", torch.device("cpu"), torch.float32).model
    ids = torch.randint(0, 512, (1, 24), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        ref, _ = forward_with_cache(m, ids)
        _, good = forward_with_cache(m, ids[:, :16])
        _, bad = forward_with_cache(m, (ids[:, :16] + 1) % 512)
        ok, _ = forward_with_cache(m, ids[:, 16:], copy.deepcopy(good))
        wrong, _ = forward_with_cache(m, ids[:, 16:], bad)
    assert logits_agree(ref, ok, torch.float32)[1]
    assert not logits_agree(ref, wrong, torch.float32)[1]
    # The experiment's prefills keep the last position's logits only (as a serving prefill does), the same ones.
    from kvreport.runner.measure.experiments.prefix_reuse import _prefill
    with torch.no_grad():
        last, _ = _prefill(m, ids)
    assert last.shape[1] == 1 and logits_agree(ref, last, torch.float32)[1]


def test_audit_page_escapes_session_ids(site):
    _, out = site
    html = (out / "audit.html").read_text()
    p = Doc(html)
    text = "".join(p.text)
    assert "<script>alert(1)</script>" in text and "<img src=x onerror=alert(1)>" in text  # shown as text
    assert "<script>alert(1)" not in html and "<img src=x" not in html  # never as markup
    assert all(a.get("type") == "application/json" or a.get("src", "").startswith("assets/") for a in p.find("script"))
    assert not any("onerror" in a for _, a in p.elements)


def test_audit_page_shows_the_figures(site):
    db, out = site
    html = (out / "audit.html").read_text()
    p = Doc(html)
    text = p.page_text()
    assert "run-1-demo · demo workload of run 1" in text and "audit-1" in text
    assert "512 B, measured" in text and "priced at 16 bits (the deployment dtype)" in text
    ids = p.ids()
    for cid in ("audit-run-1-demo-leakage", "audit-run-1-demo-ttl", "audit-run-1-demo-bloat", "audit-prefix-reuse",
                "audit-evict"):
        assert cid in ids, cid
    assert len(html) < 400_000
    # audit-1 had no --model: its KV is said to be not priced, with how to price it, never shown as None or 0
    standalone = text[text.index("audit-1 · "):text.index("run-1-demo · demo workload")]
    assert "not priced (no --model or --kv-bytes-per-token): audit with --model" in standalone
    assert "KV not priced" in standalone and "KV footprint not priced" in standalone
    assert not re.search(r"\b(None|nan)\b", standalone) and "0 B," not in standalone
    claims = (out / "claims.html").read_text()
    assert "token-ratios-sess-003" in claims and "PCER 59.26%, SPOR 11.11%" in claims
