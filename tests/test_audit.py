"""Token audits: provider conventions, rejects, errors, metrics with known answers (kvreport audit)."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from conftest import audit_and_open as audit, audit_printed, quiet_audit, quiet_run, run_cli as cli

FIX = Path(__file__).parent / "fixtures" / "audit"


def rows(con, sql, *params) -> list[dict]:
    cur = con.execute(sql, list(params))
    cols = [d[0] for d in cur.description]
    return [dict(zip(cols, r)) for r in cur.fetchall()]


def session(con, sid) -> dict:
    (r,) = rows(con, "SELECT * FROM token_audit WHERE session_id = ?", sid)
    return r


def rejects(con) -> dict[int, str]:
    return {r["line"]: r["reason"] for r in rows(con, "SELECT line, reason FROM token_rejects ORDER BY line")}


# --- provider conventions ------------------------------------------------------------------------------

def test_openai_cached_tokens_are_part_of_the_prompt(tmp_path):
    s, con = audit(tmp_path, FIX / "openai.jsonl")
    a = session(con, "s-a")  # Chat Completions (1000 prompt, 499 cached) + Responses API (1200 input, 1000 cached)
    assert a["input_tokens"] == 2200 and a["cached_input_tokens"] == 1499
    assert a["pcer"] == pytest.approx(1499 / 2200)
    assert s["overall_pcer"] == pytest.approx(1499 / 2500)  # token-weighted over every call
    u = session(con, "u-7")  # no session_id: the request's `user` names the session
    assert u["input_tokens"] == 300 and u["pcer"] == 0
    # "2025-01-01T01:00:00+01:00" is midnight UTC
    assert u["first_seen"] == dt.datetime(2025, 1, 1, 0, 0)


def test_anthropic_input_tokens_exclude_cache_reads_and_writes(tmp_path):
    _, con = audit(tmp_path, FIX / "anthropic.jsonl")
    b = session(con, "s-b")  # input_tokens 499, cache_read 99,301, cache_creation 99,200
    assert b["input_tokens"] == 499 + 99301 + 99200 == 199000
    assert b["pcer"] == pytest.approx(0.499, abs=1e-12)
    # The two classic mix-ups would have given these instead:
    assert 99301 / (499 + 99301) == pytest.approx(0.995, abs=5e-4)  # cache writes forgotten
    assert 99301 / 499 > 1                                          # input_tokens read as the total
    (call,) = rows(con, "SELECT * FROM token_calls WHERE session_id = 's-b'")
    assert call["cache_creation_input_tokens"] == 99200 and call["cached_input_tokens"] == 99301
    c = session(con, "s-c")  # no cache fields at all: nothing cached, input as given
    assert c["input_tokens"] == 10 and c["pcer"] == 0
    r = rejects(con)
    assert r[2] == "usage.input_tokens is not an integer (got 12 tokens)" and r[3] == "usage.output_tokens missing"
    assert r[4].startswith("OpenAI-style usage")


def test_otel_input_tokens_include_cached(tmp_path):
    s, con = audit(tmp_path, FIX / "otel.jsonl")
    conv = session(con, "conv-1")
    assert conv["input_tokens"] == 1000 and conv["cached_input_tokens"] == 499 and conv["pcer"] == 0.499
    assert s["n_calls"] == 1  # the HTTP span is not a call; the broken GenAI spans are rejected
    (call,) = rows(con, "SELECT * FROM token_calls")
    assert call["start_time"] == dt.datetime(2025, 1, 1) and call["end_time"] == dt.datetime(2025, 1, 1, 0, 0, 1, 500000)
    assert call["provider_name"] == "openai" and call["request_model"] == "gpt-4o"
    r = rejects(con)
    assert "span 3 (0000000000000003): gen_ai.usage.input_tokens missing" == r[1]
    assert r[2] == "malformed JSON" and "no resourceSpans" in r[3]
    assert "cache_read.input_tokens (20) > gen_ai.usage.input_tokens (10)" in r[4]


def test_otel_single_document(tmp_path):
    s, con = audit(tmp_path, FIX / "otel_doc.json")
    assert s["format"] == "otel" and session(con, "conv-doc")["pcer"] == 0.499


def test_mixed_conventions_are_rejected_not_misread(tmp_path):
    s, con = audit(tmp_path, FIX / "anthropic.jsonl", fmt="openai")
    r = rejects(con)
    assert "Anthropic-style usage" in r[1]  # would otherwise be PCER 99301/499 = 199
    assert all(p is None or p <= 1 for (p,) in con.execute("SELECT pcer FROM token_audit").fetchall())
    _, con2 = audit(tmp_path, FIX / "openai.jsonl", fmt="anthropic", db_name="b.duckdb")
    assert "OpenAI-style usage" in rejects(con2)[1]


# --- bad records: rejected with file, line and reason; good ones kept -------------------------------------

def test_openai_rejects_name_line_and_reason(tmp_path):
    s, con = audit(tmp_path, FIX / "openai.jsonl")
    r = rejects(con)
    assert set(r) == {3, 5, 6, 7, 8, 9}  # line 2 is blank: skipped, not rejected
    assert r[3] == "malformed JSON"
    assert r[5] == "usage.prompt_tokens is negative (-5)"
    assert r[6] == "usage.prompt_tokens is not an integer (got 12.5)"
    assert r[7] == "cached_tokens (200) > prompt_tokens (100)"
    assert r[8] == "response has no usage"
    assert s["n_calls"] == 3 and s["n_rejects"] == 6
    assert {x for (x,) in con.execute("SELECT DISTINCT source FROM token_rejects").fetchall()} == {
        str(FIX / "openai.jsonl")}
    assert sorted(x for (x,) in con.execute("SELECT line FROM token_calls").fetchall()) == [1, 4, 10]


def test_sessions_csv_rejects_and_the_articles_numbers(tmp_path):
    s, con = audit(tmp_path, FIX / "sessions.csv", model="gpt2", kv_max_mb=15.0)
    r = rejects(con)
    assert r == {5: "system_tokens is negative (-1)", 6: "user_tokens is not an integer (got 2.5)",
                 7: "cached_input_tokens (21) > system_tokens + user_tokens (20)", 8: "assistant_tokens missing",
                 9: "more fields than the header has columns"}
    assert session(con, "sess-003")["pcer"] == pytest.approx(8000 / 13500)  # 0.5926
    assert session(con, "sess-001")["spor"] == pytest.approx(2000 / 2150)
    assert session(con, "sess-002")["spor_warning"] and not session(con, "sess-003")["spor_warning"]
    # Priced at GPT-2's 36,864 B/token (formula, 16-bit), not the article's 1,500 B: all three cross 15 MB.
    assert s["kv_bytes_per_token"] == 36864 and s["kv_bytes_source"] == "formula"
    assert session(con, "sess-001")["kv_cache_bytes"] == 2450 * 36864
    assert s["n_kv_warnings"] == 3 and s["kv_max_bytes"] == 15_000_000 and "--kv-max-mb" in s["kv_max_basis"]


def test_sessions_parquet(tmp_path):
    pq = tmp_path / "s.parquet"
    duckdb.sql(f"""COPY (SELECT * FROM (VALUES ('p-1', 100, 50.0, 10, 30), ('p-2', 10, 2.5, 1, 0),
                   ('p-3', -1, 1.0, 1, 0)) t(session_id, system_tokens, user_tokens, assistant_tokens,
                   cached_input_tokens)) TO '{pq}' (FORMAT PARQUET)""")
    s, con = audit(tmp_path, pq)
    assert s["format"] == "sessions" and session(con, "p-1")["pcer"] == pytest.approx(30 / 150)
    assert rejects(con) == {2: "user_tokens is not an integer (got 2.5)", 3: "system_tokens is negative (-1)"}


def test_invalid_utf8_and_long_lines(tmp_path):
    good = json.loads((FIX / "openai.jsonl").read_text().splitlines()[0])
    big = dict(good, request={"messages": [{"role": "user", "content": "x" * 3_000_000}]})
    log = tmp_path / "mixed.jsonl"
    log.write_bytes(json.dumps(good).encode() + b"\n" + b'{"session_id": "\xff\xfe"}\n' + json.dumps(big).encode()
                    + b"\r\n" + json.dumps(good).encode() + b"\n{oops\n")  # mixed line endings too
    s, con = audit(tmp_path, log)
    assert s["n_calls"] == 3 and rejects(con) == {2: "malformed JSON", 5: "malformed JSON"}


# --- whole-file errors: clear message, non-zero exit, nothing written ---------------------------------------

def test_unknown_format_and_unreadable_files_write_nothing(tmp_path, capsys):
    db = tmp_path / "k.duckdb"
    junk = tmp_path / "notes.txt"
    junk.write_text("hello world\n")
    assert cli("audit", junk, "--db", db) == 2
    err = capsys.readouterr().err
    assert "notes.txt" in err and "Traceback" not in err
    assert cli("audit", tmp_path / "missing.jsonl", "--db", db) == 2
    assert "no such file" in capsys.readouterr().err
    assert cli("audit", tmp_path, "--db", db) == 2  # a folder
    assert cli("audit", FIX / "openai.jsonl", "--format", "csv", "--db", db) == 2
    assert not db.exists()


@pytest.mark.slow
def test_nothing_valid_and_strict(tmp_path, capsys):
    db = tmp_path / "k.duckdb"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"response": {"usage": {"prompt_tokens": -1, "completion_tokens": 1}}}\n{oops\n')
    assert cli("audit", bad, "--format", "openai", "--db", db) == 1
    assert "no valid records" in capsys.readouterr().err and not db.exists()
    assert cli("audit", FIX / "openai.jsonl", "--strict", "--db", db) == 1
    err = capsys.readouterr().err
    assert "--strict: 6 record(s) rejected" in err and "openai.jsonl:3: malformed JSON" in err
    assert not db.exists()
    # Into an existing DB: a failed audit adds nothing to it.
    quiet_audit([FIX / "sessions.jsonl"], db)
    assert cli("audit", FIX / "openai.jsonl", "--strict", "--db", db) == 1
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT count(*) FROM audits").fetchone()[0] == 1
    assert con.execute("SELECT count(*) FROM token_rejects").fetchone()[0] == 0
    con.close()
    assert cli("audit", FIX / "openai.jsonl", "--db", db) == 0  # rejects without --strict: exit 0
    assert "rejected: 6 record(s)" in capsys.readouterr().out


# --- metrics with known answers -----------------------------------------------------------------------------

def test_spor_is_null_with_a_reason_without_counts_or_tokenizer(tmp_path):
    s, con = audit(tmp_path, FIX / "openai.jsonl")
    assert s["overall_spor"] is None and "--tokenizer" in s["spor_reason"]
    a = session(con, "s-a")
    assert a["spor"] is None and "--tokenizer" in a["spor_reason"] and a["spor_warning"] is None


def test_leakage_index_and_ttl_sweep_known_answer(tmp_path):
    """A, B: 1,000 tokens from t=0; A's last activity at 100 s, B's at 1,000 s (the log's end); C: 2,000
    tokens, last activity 200 s, disconnects at 250 s. Idle timeout 300 s:
    idle = A 600 s x 1k + C 750 s x 2k = 2,100 k-token-s of 4,000 held: leakage 0.525."""
    s, con = audit(tmp_path, FIX / "sessions.jsonl", idle_timeout=300, model="gpt2")
    assert s["leakage_index"] == pytest.approx(0.525)
    bpt = s["kv_bytes_per_token"]
    assert session(con, "A")["idle_kv_byte_seconds"] == pytest.approx(600 * 1000 * bpt)
    assert session(con, "C")["idle_kv_byte_seconds"] == pytest.approx(750 * 2000 * bpt)
    ttl = {r["ttl_s"]: r for r in rows(con, "SELECT * FROM token_ttl_sweep")}
    # TTL 60 s: A held 160 s, B all 1,000 s, C until its disconnect at 250 s.
    assert ttl[60.0]["held_byte_seconds"] == pytest.approx((160 * 1000 + 1000 * 1000 + 250 * 2000) * bpt)
    assert ttl[60.0]["capacity_multiplier"] == pytest.approx(4000 / 1660)
    assert ttl[300.0]["freed_share"] == pytest.approx(s["leakage_index"])
    assert ttl[None]["capacity_multiplier"] == 1
    # set against the default --gpu's whole memory, whatever the DB holds
    assert ttl[None]["memory_bytes"] == 80e9 and "H100 80GB" in ttl[None]["memory_source"]
    s2, _ = audit(tmp_path, FIX / "sessions.jsonl", idle_timeout=1000, db_name="b.duckdb")
    assert s2["leakage_index"] == pytest.approx(750 * 2000 / 4000 / 1000)  # only C's disconnect remains


def _tokenizer(path: Path, words: list[str]) -> Path:
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({w: i for i, w in enumerate(["[UNK]", *words])}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.save(str(path))
    return path


def test_an_audit_without_a_tokenizer_never_loads_the_tokenizers_library(tmp_path):
    """Its memory (a few MB, against the audit's bound of --memory-limit + 150 MB) is paid only with --tokenizer."""
    code = ("import sys; from kvreport.runner.cli import main\n"
            f"try:\n    main(['audit', {str(FIX / 'sessions.jsonl')!r}, '--db', {str(tmp_path / 'a.duckdb')!r}])\n"
            "except SystemExit as e:\n    assert not e.code, e.code\n"
            "assert 'tokenizers' not in sys.modules\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert (tmp_path / "a.duckdb").is_file()


def test_tokenizer_counts_spor_and_finds_a_timestamp_at_the_top(tmp_path):
    words = "Time : 10 11 You are a helpful bot . hi again Reply in JSON please with keys".split()
    tok = _tokenizer(tmp_path / "tokenizer.json", words)
    log = tmp_path / "chat.jsonl"
    lines = []
    history = []
    for i, t in enumerate(["10", "11"]):
        history.append({"role": "user", "content": "hi again . Reply in JSON please with keys ."})
        sys_msg = {"role": "system", "content": f"Time : {t} . You are a helpful bot ."}  # 10 tokens
        lines.append({"session_id": "ts", "timestamp": 1735689600 + 60 * i,
                      "request": {"messages": [sys_msg, *history]},
                      "response": {"object": "chat.completion",
                                   "usage": {"prompt_tokens": 30, "completion_tokens": 3,
                                             "prompt_tokens_details": {"cached_tokens": 0}}}})
        history.append({"role": "assistant", "content": "hi"})
    log.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    s, con = audit(tmp_path, log, tokenizer=str(tok))
    assert s["overall_spor"] == pytest.approx(10 / 30) and s["content_calls"] == 2
    (b,) = rows(con, "SELECT * FROM token_bloat")
    assert b["broken_pairs"] == 1 and b["diverge_in"] == "system prompt"
    assert b["diverge_context"].endswith("Time : 1") and b["diverge_prev"].startswith("0") and b["diverge_next"].startswith("1")
    assert b["achievable_pcer"] < b["stable_prefix_pcer"]
    (rep,) = rows(con, "SELECT * FROM token_repeats")
    assert rep["instruction"] == "Reply in JSON please with keys" and rep["n_turns"] == 2 and rep["tokens"] == 6
    # Message text never reaches the DB beyond the short snippets above.
    assert "helpful bot" not in json.dumps(rows(con, "SELECT * FROM token_calls"), default=str)


@pytest.mark.slow
def test_measured_bytes_per_token_preferred(tmp_path):
    db = tmp_path / "k.duckdb"
    # A float32 run's 1,024 B/token (2x2x4x16x4) is twice what the audit prices (16-bit): it is not used.
    quiet_run(db, only=["cache_tensors"])
    s, con = audit(tmp_path, FIX / "sessions.csv", db_name="k.duckdb", model="tiny-gpt2")
    con.close()
    assert s["kv_bytes_source"] == "formula" and s["kv_bytes_per_token"] == 512
    quiet_run(db, dtype="bfloat16", only=["cache_tensors"])
    s, _ = audit(tmp_path, FIX / "sessions.csv", db_name="k.duckdb", model="tiny-gpt2")
    assert s["kv_bytes_source"] == "measured" and s["kv_bytes_per_token"] == 512
    assert "run 2" in s["kv_bytes_detail"] and "bfloat16" in s["kv_bytes_detail"]


def test_unknown_model_is_a_clear_error(tmp_path, capsys):
    assert cli("audit", FIX / "sessions.csv", "--model", "gpt-99", "--db", tmp_path / "k.duckdb") == 2
    assert "unknown model" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_unreadable_file(tmp_path, capsys):
    f = tmp_path / "locked.jsonl"
    f.write_text("{}\n")
    f.chmod(0)
    assert cli("audit", f, "--db", tmp_path / "k.duckdb") == 2
    assert "cannot read" in capsys.readouterr().err


# --- one bad line never costs the file (issue 16) ------------------------------------------------------------

def _openai_line(i: int, prompt="100") -> str:
    return ('{"session_id": "s-%d", "timestamp": "2025-01-01T00:%02d:00Z", "response": {"usage": {"prompt_tokens": %s, '
            '"completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 10}}}}' % (i % 7, i % 60, prompt))


def test_out_of_range_nan_and_blank_lines_cost_one_line_each(tmp_path):
    """The three lines that used to refuse a 3,000-line file (exit 2, nothing audited) are one reject or
    one skipped line each; every other line is audited."""
    bad = {100: "1e300", 200: str(2 ** 70), 300: '"NaN"', 400: "Infinity", 500: "-1e300", 600: '"1e400"',
           700: "9223372036854775807", 800: "10000000001"}
    lines = [_openai_line(i, bad.get(i, "100")) for i in range(1, 3001)]
    lines[999 - 1] = "   "    # line 999: only spaces
    lines[1999 - 1] = "\t \r"  # line 1999: tab, space, carriage return
    log = tmp_path / "mangled.jsonl"
    log.write_text("\n".join(lines) + "\n")
    s, con = audit(tmp_path, log)
    r = rejects(con)
    assert r[100] == "usage.prompt_tokens is out of range (got 1e+300; a token count is at most 10,000,000,000)"
    assert r[200].startswith(f"usage.prompt_tokens is out of range (got {2 ** 70}")
    assert r[300] == "usage.prompt_tokens is not a finite number (got NaN)"
    assert r[400] == "usage.prompt_tokens is not a finite number (got Infinity)"  # DuckDB's JSON reads it
    assert r[500] == "usage.prompt_tokens is negative (-1e+300)"
    assert r[600] == "usage.prompt_tokens is out of range (got 1e400)"
    assert "out of range" in r[700] and "out of range" in r[800]
    assert set(r) == set(bad)
    assert s["n_calls"] == 3000 - len(bad) - 2 and s["n_skipped_lines"] == 2
    assert con.execute("SELECT max(input_tokens) FROM token_calls").fetchone()[0] == 100


def test_sessions_csv_blank_lines_quoted_newlines_and_odd_cells(tmp_path):
    """Line numbers are the file's own, past blank lines and a cell that spans two lines; cells that look
    like numbers but are not JSON ("007") or are out of range are rejects, not a failed file."""
    f = tmp_path / "s.csv"
    f.write_text("session_id,system_tokens,user_tokens,assistant_tokens,cached_input_tokens\n"
                 "a,1,2,3,0\n\n   \n\"b\nc\",1,2,3,0\nd,007,1,1,0\ne,1,1e999,1,0\nf,1,NaN,1,0\ng,1,2,3,0\n")
    s, con = audit(tmp_path, f)
    assert rejects(con) == {7: 'system_tokens is not an integer (got "007")', 8: "user_tokens is out of range (got 1e999)",
                            9: 'user_tokens is not an integer (got "NaN")'}
    assert dict(con.execute("SELECT session_id, line FROM token_calls").fetchall()) == {"a": 2, "b\nc": 5, "g": 10}
    assert s["n_skipped_lines"] == 2


def test_sessions_parquet_non_finite_and_huge_values(tmp_path):
    pq = tmp_path / "s.parquet"
    duckdb.sql(f"""COPY (SELECT * FROM (VALUES ('p-1', 100::UBIGINT, 'nan'::DOUBLE, 10, 30, 'infinity'::TIMESTAMP),
                   ('p-2', 18446744073709551615::UBIGINT, 2.0, 1, 0, NULL), ('p-3', 1::UBIGINT, 'inf'::DOUBLE, 1, 0, NULL),
                   ('p-4', 1::UBIGINT, 2::DOUBLE, 1, 0, TIMESTAMP '2025-01-01'), ('p-5', 1::UBIGINT, 2, 1, 0, 'infinity'))
                   t(session_id, system_tokens, user_tokens, assistant_tokens, cached_input_tokens, first_seen))
                   TO '{pq}' (FORMAT PARQUET)""")
    s, con = audit(tmp_path, pq)
    r = rejects(con)
    assert r[1] == "user_tokens is not a finite number (got NaN)" and r[3] == "user_tokens is not a finite number (got Infinity)"
    assert r[2].startswith("system_tokens is out of range (got 18446744073709551615")
    assert r[5] == 'first_seen is not a time (got "infinity")'
    assert s["n_calls"] == 1


def test_a_sliding_window_model_prices_each_session_at_its_own_length(tmp_path):
    # A synthetic Gemma-3-shaped config: 6 layers, 5 sliding (window 1024) and 1 full, 2 KV heads x 16 dims.
    cfg = Path(__file__).parent / "fixtures" / "models" / "gemma-like-tiny"
    s, con = audit(tmp_path, FIX / "sessions.csv", model=str(cfg))
    per_layer_token = 2 * 2 * 16 * 2                      # K and V x 2 heads x 16 dims x 2 bytes (16-bit)
    assert s["kv_bytes_per_token"] == 6 * per_layer_token  # below the window every layer grows
    tokens = 1500 + 12000 + 500                            # sess-003's context
    flat = tokens * 6 * per_layer_token
    # the 5 sliding layers hold window - 1 = 1023 tokens, the full layer all of them
    assert session(con, "sess-003")["kv_cache_bytes"] == 5 * 1023 * per_layer_token + tokens * per_layer_token
    assert flat - session(con, "sess-003")["kv_cache_bytes"] == 5 * per_layer_token * (tokens - 1023)
    # sess-001: 2000 + 150 + 300 = 2450 tokens, past the window too
    assert session(con, "sess-001")["kv_cache_bytes"] == 5 * 1023 * per_layer_token + 2450 * per_layer_token
    assert "stop growing at 1,023 tokens" in s["kv_bytes_detail"]


def test_a_model_with_constant_state_adds_it_to_every_session(tmp_path):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps({
        "model_type": "jamba", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 2,
        "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 64, "attn_layer_period": 2,
        "attn_layer_offset": 1, "mamba_d_state": 8, "mamba_d_conv": 4, "mamba_expand": 2, "num_experts": 1}))
    s, con = audit(tmp_path, FIX / "sessions.csv", model=str(cfg))
    state = 64 * 4 * 2 + 64 * 8 * 4   # layer 0 Mamba: conv 64 channels x 4 in 16-bit, SSM 64 x 8 in float32
    per_token = 2 * 2 * 8 * 2         # layer 1 attention: K and V x 2 heads x 8 dims x 2 bytes
    assert session(con, "sess-001")["kv_cache_bytes"] == 2450 * per_token + state
    assert s["kv_bytes_per_token"] == per_token and "constant state" in s["kv_bytes_detail"]


def test_guardrails_report_the_distribution_beside_the_count(tmp_path):
    """sessions.csv's three good sessions hold 2,450, 4,150 and 14,000 tokens of context (x 36,864 B/token for
    gpt2 at 16 bits: 90.3, 153.0, 516.1 MB) with SPOR 2000/2150, 4000/4050 and 1500/13500."""
    s, said = audit_printed([FIX / "sessions.csv"], db=tmp_path / "a.duckdb", model="gpt2", gpu="H200")
    # The default KV limit: 1/1024 of the H200's 141 GB (vLLM's default batch on a GPU of >= 70 GiB that is not
    # an A100), 137.7 MB: two sessions over it, not all three as under the article's 15 MB.
    assert s["kv_max_bytes"] == pytest.approx(141e9 / 1024, abs=1) and "1/1024" in s["kv_max_basis"]
    assert s["n_kv_warnings"] == 2 and s["n_sessions"] == 3
    # p50 and p90 are sessions' own figures (quantile_disc), stored beside the counts
    assert (s["session_kv_p50_bytes"], s["session_kv_p90_bytes"], s["session_kv_max_bytes"]) == (
        4150 * 36864, 14000 * 36864, 14000 * 36864)
    assert (s["session_spor_p50"], s["session_spor_p90"], s["session_spor_max"]) == (
        pytest.approx(2000 / 2150), pytest.approx(4000 / 4050), pytest.approx(4000 / 4050))
    kv_line = next(line for line in said if "guardrails: KV" in line)
    assert "2 of 3 session(s)" in kv_line and "p50 153.0 MB, p90 516.1 MB, max 516.1 MB" in kv_line
    spor_line = next(line for line in said if "guardrails: SPOR" in line)
    assert "2 of 3 session(s)" in spor_line and "p50 93.0%, p90 98.8%, max 98.8%" in spor_line
    # an A100 batches 256 by default, whatever its memory; a GPU named by its size alone, too
    for gpu, share in (("A100 80GB", 80e9 / 256), ("48GB", 48e9 / 256)):
        s = quiet_audit([FIX / "sessions.csv"], db=tmp_path / f"{gpu}.duckdb", model="gpt2", gpu=gpu)
        assert s["kv_max_bytes"] == pytest.approx(share, abs=1) and "1/256" in s["kv_max_basis"]


# --- the library call and its request -------------------------------------------------------------------------

@pytest.mark.parametrize("fields,option", [
    (dict(fmt="csv"), "--format"), (dict(idle_timeout=float("nan")), "--idle-timeout"),
    (dict(spor_max=1.5), "--spor-max"), (dict(memory_limit="1KB"), "--memory-limit"), (dict(gpu="A100"), "--gpu"),
    (dict(since="yesterday"), "--since"), (dict(since="2026-11-02", until="2026-11-01"), "--since"),
    (dict(model="gpt2", kv_bytes_per_token=1e3), "--kv-bytes-per-token"), (dict(ray="logs.jsonl"), "--ray"),
    (dict(ray="local", ray_workers=0), "--ray-workers")])
def test_a_request_checks_itself_before_any_file_is_read(fields, option):
    from kvreport.runner.audit.api import AuditRequest
    from kvreport.runner.core.errors import UserError

    with pytest.raises(UserError, match=option):
        AuditRequest(**fields)


def test_a_request_is_frozen_and_normalised():
    import dataclasses

    from kvreport.runner.audit.api import AuditRequest

    r = AuditRequest(session_keys=["a.b"], memory_limit="2gb", since="2026-11-01T01:00:00+01:00")
    assert r.session_keys == ("a.b",) and r.memory_limit == "2GB"
    assert r.window == (dt.datetime(2026, 11, 1), None)
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.strict = True  # type: ignore[misc]


def test_quiet_and_verbose(tmp_path):
    from conftest import cli_in_process

    db = tmp_path / "k.duckdb"
    full = cli_in_process("audit", FIX / "openai.jsonl", FIX / "anthropic.jsonl", "--db", db)
    quiet = cli_in_process("audit", FIX / "openai.jsonl", "--db", db, "--quiet")
    verbose = cli_in_process("audit", FIX / "openai.jsonl", FIX / "anthropic.jsonl", "--db", db, "--verbose")
    assert full.returncode == quiet.returncode == verbose.returncode == 0
    assert full.stdout.startswith("KV cache not priced") and "read openai.jsonl" not in full.stdout
    assert quiet.stdout.splitlines() == [f"audit-2: 3 calls in 2 sessions from 1 file(s) (openai) -> {db}"]
    lines = verbose.stdout.splitlines()
    assert lines[1].startswith("  read openai.jsonl: 10 lines, ") and lines[2].startswith("  read anthropic.jsonl: ")
    assert lines[3:] == [line.replace("audit-1", "audit-3") for line in full.stdout.splitlines()[1:]]
