"""The fast reader of OpenAI API-object logs read with their shape's default keys (DuckDB's JSON reader into the
shape's record, line numbers from the row order) against the line-exact one: the same content must give the same
audit, every reject at its own line; the lines it cannot judge without their text are read again line-exactly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import audit_tables

from kvreport.runner.audit import engine
from kvreport.runner.audit.formats import Keys
from kvreport.runner.audit.kv_pricing import Memory, Pricing
from kvreport.runner.core.connections import connect
from kvreport.runner.core.migrations import apply_steps


def _chat(i: int, **over) -> dict:
    rec = {"id": f"chatcmpl-{i}", "object": "chat.completion", "created": 1748858400 + i * 7,
           "model": "gpt-4o-mini-2024-07-18", "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}}],
           "usage": {"prompt_tokens": 100 + i, "completion_tokens": 5 + i % 9,
                     "prompt_tokens_details": {"cached_tokens": (i % 3) * 32}},
           "metadata": {"session_id": f"s{i % 7}"}}
    rec.update(over)
    return rec


def _response(i: int, **over) -> dict:
    rec = {"id": f"resp_{i}", "object": "response", "created_at": 1748858400 + i * 7, "status": "completed",
           "model": "gpt-4o-mini", "usage": {"input_tokens": 100 + i, "output_tokens": 5 + i % 9,
                                             "input_tokens_details": {"cached_tokens": (i % 3) * 32}},
           "conversation": {"id": f"conv{i % 5}"}}
    rec.update(over)
    return rec


# Lines of every kind the fast reader must judge as the line-exact one does: some from the parsed values, some
# (not JSON, not an object, no usage) by reading them again.
_ODD = [
    "{truncated", "[1, 2]", "null", '"text"', "17", '{"usage": "abc"}', "{}",
    '{"usage": {"prompt_tokens": "12", "completion_tokens": 3}, "created": "2025-06-02T10:00:00Z"}',
    '{"usage": {"prompt_tokens": 12.0, "completion_tokens": 3}, "created": 1748858400.5}',
    '{"usage": {"prompt_tokens": 5, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 9}}}',
    '{"error": {"code": "x", "message": "boom"}}',
    '{"usage": {"prompt_tokens": [1], "completion_tokens": {"a": 1}}, "metadata": {"session_id": 7}, "created": true}',
    '{"usage": {"prompt_tokens": 5, "completion_tokens": 1}, "metadata": {"session_id": "a", "session_id": "b"}}',
    '{"usage": {"prompt_tokens": 5, "completion_tokens": 1}} trailing',
    '{"object": "chat.completion.chunk", "usage": {"prompt_tokens": 5, "completion_tokens": 1}}',
    '{"object": "response", "status": "failed", "error": {"code": "e", "message": "m"}, "usage": null}',
    '{"usage": {"input_tokens": -3, "output_tokens": 1}, "created_at": 1748858400}',
]


def _audit(path: Path, fmt: str, fast: bool, tmp_path: Path) -> tuple[dict, engine.AuditResult]:
    return audit_tables([path], tmp_path, fmt=fmt, fast_read=fast)


def _rounded(row: dict) -> str:
    """A row as text, each float to 12 significant digits: a session's sums of doubles (its dollars) depend on the
    order its calls were added in, and lines read again come after the others."""
    return repr({k: float(f"{v:.12g}") if isinstance(v, float) else v for k, v in row.items()})


def _same_audit(path: Path, fmt: str, tmp_path: Path) -> tuple[str, dict]:
    fast, res_fast = _audit(path, fmt, True, tmp_path)
    exact, res_exact = _audit(path, fmt, False, tmp_path)
    assert res_exact.readers == {str(path): "line-exact"}
    for name in exact:  # rows read again are written after the others: the order of rows is no result
        assert sorted(map(_rounded, fast[name])) == sorted(map(_rounded, exact[name])), name
    return res_fast.readers[str(path)], fast


@pytest.mark.parametrize("fmt, record", [("openai-chat", _chat), ("openai-response", _response)])
def test_odd_lines_get_the_line_exact_audit_at_their_own_lines(tmp_path, fmt, record):
    lines = [json.dumps(record(i)) for i in range(400)]
    for k, odd in enumerate(_ODD):
        lines.insert(3 + 11 * k, odd)
    log = tmp_path / "objects.jsonl"
    log.write_text("\n".join(lines) + "\n")
    reader, tables = _same_audit(log, fmt, tmp_path)
    assert reader.startswith("fast, ")  # the fast reader read it, some lines again
    rejects = {r["line"]: r["reason"] for r in tables["token_rejects"]}
    assert rejects[4] == "malformed JSON" and rejects[15] == "not a JSON object"  # "[1, 2]" at index 14


def test_a_clean_file_takes_the_fast_reader(tmp_path):
    log = tmp_path / "clean.jsonl"
    log.write_text("\n".join(json.dumps(_chat(i)) for i in range(50)))  # no final newline
    reader, tables = _same_audit(log, "openai-chat", tmp_path)
    assert reader == "fast" and sum(r["n_calls"] for r in tables["token_audit"]) == 50


def test_keys_of_the_users_own_take_the_line_exact_reader(tmp_path):
    log = tmp_path / "keys.jsonl"
    log.write_text("\n".join(json.dumps(_chat(i)) for i in range(50)) + "\n")
    con = connect()
    try:
        apply_steps(con, 0)
        res = engine.run_audit(con, [log], engine.AuditOptions(fmt="openai-chat", keys=Keys(session=("$.id",)),
                                                                 workdir=str(tmp_path)),
                               audit_id="a", run_id=None, model="gpt2", pricing=Pricing(36864.0, "formula", "test"),
                               memory=Memory(None, None))
    finally:
        con.close()
    assert res.readers == {str(log): "line-exact"}


def _litellm(i: int, **over) -> dict:
    rec = {"id": f"req-{i}", "trace_id": f"t{i % 6}", "call_type": "acompletion", "status": "success",
           "model": "gpt-4o-mini", "custom_llm_provider": "openai", "prompt_tokens": 100 + i,
           "completion_tokens": 5 + i % 9, "startTime": 1748858400.25 + i, "endTime": 1748858401.5 + i,
           "cache_hit": False, "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"q{i}"}],
           "metadata": {"usage_object": {"prompt_tokens": 100 + i, "completion_tokens": 5 + i % 9,
                                         "prompt_tokens_details": {"cached_tokens": (i % 3) * 32}}}}
    rec.update(over)
    return rec


def test_litellm_lines_get_the_line_exact_audit_at_their_own_lines(tmp_path):
    fixture = (Path(__file__).parent / "fixtures" / "audit" / "litellm.jsonl").read_text().splitlines()
    lines = [json.dumps(_litellm(i)) for i in range(600)]  # the odd lines stay under one in twenty
    odd = [*_ODD, *(line for line in fixture if line.strip()),
           json.dumps(_litellm(1, metadata=json.dumps({"usage_object": {"cache_read_input_tokens": 7}}))),
           json.dumps(_litellm(2, cache_hit=True)), json.dumps(_litellm(3, status="failure", error_str="x")),
           json.dumps(_litellm(4, call_type=None)), json.dumps(_litellm(5, startTime="2025-06-02T10:00:00Z")),
           '{"call_type": "acompletion", "prompt_tokens": 5, "completion_tokens": 1, "messages":  [ {"a" : 1} ]}',
           json.dumps(_litellm(6, hidden_params={"usage_object": {"cache_read_input_tokens": 3}}, metadata=None)),
           # metadata without a usage object: the typed record cannot tell it from a string, so it is read again
           json.dumps(_litellm(7, hidden_params={"usage_object": {"cache_read_input_tokens": 4}},
                               metadata={"user_api_key_alias": "team-a"})),
           json.dumps(_litellm(8, metadata=["not", "an", "object"])),
           json.dumps(_litellm(9, prompt_tokens=300, metadata={"usage_object": {
               "prompt_tokens": 300, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 20}}))]
    for k, line in enumerate(odd):
        lines.insert(3 + 11 * k, line)
    log = tmp_path / "litellm.jsonl"
    log.write_text("\n".join(lines) + "\n")
    reader, tables = _same_audit(log, "litellm", tmp_path)
    assert reader.startswith("fast, ")
    rejects = {r["line"]: r["reason"] for r in tables["token_rejects"]}
    assert rejects[4] == "malformed JSON" and rejects[15] == "not a JSON object"
    # both readers share how a usage object's figures are taken: what they took, by the line each was logged on
    calls = {r["line"]: r for r in tables["token_call_rows"]}
    cached = {k: calls[lines.index(odd[k]) + 1]["cached_input_tokens"] for k in (-10, -4, -3, -1)}
    assert cached == {-10: 7, -4: 3, -3: 4, -1: 100}
    assert calls[lines.index(odd[-1]) + 1]["cache_creation_input_tokens"] == 20


def test_litellm_spend_log_rows_keep_the_fast_reader(tmp_path):
    # LiteLLM_SpendLogs rows keep metadata as JSON text: the reader that parses it as text takes the file (the typed
    # one would read every line again, line-exactly), and gives the line-exact audit.
    lines = [json.dumps(_litellm(i, metadata=json.dumps(_litellm(i)["metadata"]))) for i in range(300)]
    lines.insert(40, json.dumps(_litellm(300)))  # an object among them is read as well
    log = tmp_path / "spend.jsonl"
    log.write_text("\n".join(lines) + "\n")
    reader, tables = _same_audit(log, "litellm", tmp_path)
    assert reader == "fast"
    assert sum(r["cached_input_tokens"] for r in tables["token_call_rows"]) == sum(
        (i % 3) * 32 for i in range(301))


def _message(i: int, **over) -> dict:
    rec = {"id": f"msg_{i}", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
           "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
           "usage": {"input_tokens": 10 + i, "output_tokens": 5 + i % 9, "cache_creation_input_tokens": i % 2 * 64,
                     "cache_read_input_tokens": (i % 3) * 32},
           "session_id": f"s{i % 7}", "timestamp": f"2025-06-02T10:{i % 60:02d}:00.{i:06d}Z"}
    rec.update(over)
    return rec


# Anthropic lines of every kind: the same odd lines, and what a logger's own keys can hold.
_ODD_MESSAGES = [
    *_ODD,
    json.dumps(_message(1, session_id={"a": [1, 2]}, timestamp=1748858400.5)),
    json.dumps(_message(2, session_id=None, timestamp="yesterday")),
    json.dumps(_message(3, session_id=17, timestamp="2025-06-02T12:00:00+02:00")),
    '{"type": "message", "usage": {"input_tokens": 3, "output_tokens": 1}, "session_id": "a", "session_id": "b"}',
    '{"type": "message", "usage": {"input_tokens": 3, "output_tokens": 1}, "Session_ID": "A", "TIMESTAMP": "x"}',
    json.dumps(_message(4, type="error", error={"type": "overloaded_error", "message": "busy"}, usage=None)),
    json.dumps(_message(5, usage={"prompt_tokens": 3, "completion_tokens": 1})),
    json.dumps(_message(6, usage={"input_tokens": -3, "output_tokens": 1})),
    json.dumps(_message(7, usage={"output_tokens": 1})),
    json.dumps(_message(8, type="completion")),
    json.dumps(_message(9, usage="abc")),
    '{"custom_id": "r1", "result": {"type": "succeeded", "message": {"type": "message", "usage": {"input_tokens": 1}}}}',
]


@pytest.mark.parametrize("keys", [Keys(("$.session_id",), ("$.timestamp",)), Keys(), Keys(time=("$.timestamp",)),
                                  Keys(session=("$.session_id",))])
def test_anthropic_messages_get_the_line_exact_audit_at_their_own_lines(tmp_path, keys):
    lines = [json.dumps(_message(i)) for i in range(400)]
    for k, odd in enumerate(_ODD_MESSAGES):
        lines.insert(3 + 11 * k, odd)
    log = tmp_path / "messages.jsonl"
    log.write_text("\n".join(lines) + "\n")
    fast, res_fast = audit_tables([log], tmp_path, fmt="anthropic-message", keys=keys, fast_read=True)
    exact, res_exact = audit_tables([log], tmp_path, fmt="anthropic-message", keys=keys, fast_read=False)
    assert res_fast.readers[str(log)].startswith("fast, ") and res_exact.readers[str(log)] == "line-exact"
    for name in exact:
        assert sorted(map(repr, fast[name])) == sorted(map(repr, exact[name])), name
    rejects = {r["line"]: r["reason"] for r in fast["token_rejects"]}
    assert rejects[4] == "malformed JSON" and rejects[15] == "not a JSON object"
    assert len(fast["token_call_rows"]) > 400


@pytest.mark.parametrize("keys", [Keys(("$.metadata.user_id",), ()), Keys(("$.usage",), ()),
                                  Keys(("$.a", "$.b"), ()), Keys(("$.t",), ("$.t",)), Keys((), ('$."odd key"',))])
def test_anthropic_keys_it_cannot_read_as_fields_take_the_line_exact_reader(tmp_path, keys):
    log = tmp_path / "messages.jsonl"
    log.write_text("\n".join(json.dumps(_message(i)) for i in range(20)) + "\n")
    _, res = audit_tables([log], tmp_path, fmt="anthropic-message", keys=keys)
    assert res.readers == {str(log): "line-exact"}


def test_the_fields_anthropic_keys_may_not_name_are_the_records_own():
    """A key named like a field of the record would be read as that field's text (or not at all): fastread.py
    leaves such keys to the line-exact reader, by this list."""
    import duckdb

    from kvreport.runner.audit.fastread import _ANTHROPIC_FIELDS
    from kvreport.runner.audit.sqlfiles import run_sql

    con = duckdb.connect()
    run_sql(con, "ingest/anthropic_message_record")
    record = json.loads(con.execute("SELECT kv_anthropic_message_record()").fetchone()[0])
    assert set(record) == _ANTHROPIC_FIELDS


@pytest.mark.parametrize("metadata, plan", [
    ({"usage_object": {"prompt_tokens": 5}}, "shape-fast-litellm"),   # the proxy's payload: figures typed
    (None, "shape-fast-litellm"),                                      # usage from hidden_params, if any
    ("{\"usage_object\": {}}", "shape-fast-litellm-text"),             # a spend-log row: metadata as text
    ({"user_api_key_alias": "a"}, "shape-fast-litellm-text"),          # no usage object in the metadata
])
def test_a_litellm_file_takes_the_reader_its_first_line_suits(tmp_path, metadata, plan):
    from kvreport.runner.audit.fastread import _shape_plan
    from kvreport.runner.audit.formats import Source

    log = tmp_path / "l.jsonl"
    log.write_text(json.dumps(_litellm(0, metadata=metadata)) + "\n")
    assert _shape_plan(Source(log, "litellm", "jsonl")) == plan
