"""Every reject rule of every ingest (runner/audit/sql/ingest_*.sql, the shapes' common checks in
ingest/calls_from_usage.sql, the sessions readers and the value macros) reached by one fixture line, with its
reason asserted exactly. One `kvreport audit` per format: a valid first line, then one line per rule, so
line N+1 is rule N; a rule whose check is dropped lets its line through as a call and the test names it.
A meta-test reads the SQL and fails when a reject literal has no fixture here."""
from __future__ import annotations

import json
import random
import re
from importlib import resources
from pathlib import Path

import duckdb
import pytest

from conftest import quiet_audit

SQL = Path(str(resources.files("kvreport.runner.audit") / "sql"))


# --- line builders ------------------------------------------------------------------------------------

def envelope(usage: dict | None = None, response: dict | None = None, **top) -> dict:
    """An OpenAI/Anthropic log envelope {"session_id", "response": {"usage": ...}}."""
    resp = response if response is not None else {"usage": usage}
    return {"session_id": "s", **top, "response": resp}


def openai_env(**over):
    return envelope({"prompt_tokens": 10, "completion_tokens": 2, **over})


def anthropic_env(**over):
    return envelope({"input_tokens": 10, "output_tokens": 2, **over})


def chat(**usage):
    return {"id": "c", "object": "chat.completion", "created": 1735689600, "model": "m",
            "usage": {"prompt_tokens": 10, "completion_tokens": 2, **usage}}


def response_obj(**usage):
    return {"id": "r", "object": "response", "created_at": 1735689600, "status": "completed", "model": "m",
            "usage": {"input_tokens": 10, "output_tokens": 2, **usage}}


def batch_line(body=None, **top):
    return {"id": "b", "custom_id": "c1", "response": {"status_code": 200, "body": chat() if body is None else body},
            "error": None, **top}


def message(**usage):
    usage = {"input_tokens": 10, "output_tokens": 2, **usage}
    return {"id": "m", "type": "message", "role": "assistant", "model": "claude",
            "usage": {k: v for k, v in usage.items() if v is not None}}


def message_result(msg=None):
    return {"custom_id": "c", "result": {"type": "succeeded", "message": msg or message()}}


def litellm(**over):
    line = {"id": "r", "call_type": "acompletion", "status": "success", "model": "gpt-4o", "prompt_tokens": 10,
            "completion_tokens": 2, "startTime": 1735689600.5, "endTime": 1735689601.0, **over}
    return {k: v for k, v in line.items() if v is not None}


def usage_object(**usage):
    return litellm(metadata={"usage_object": usage})


def langfuse(**over):
    return {"id": "o", "traceId": "t", "type": "GENERATION", "startTime": "2025-01-01T00:00:00Z",
            "endTime": "2025-01-01T00:00:01Z", "model": "m", "usageDetails": {"input": 10, "output": 2}, **over}


def _attr(key, value):
    kind = "intValue" if isinstance(value, int) else "doubleValue" if isinstance(value, float) else "stringValue"
    return {"key": key, "value": {kind: str(value) if kind == "intValue" else value}}


def span(span_id="a1", start="1735689600000000000", end="1735689601000000000", **attrs):
    """An OTLP span with GenAI usage (attrs use __ for dots: gen_ai__usage__input_tokens)."""
    values = {"gen_ai.usage.input_tokens": 10, "gen_ai.usage.output_tokens": 2, "gen_ai.request.model": "m",
              **{k.replace("__", "."): v for k, v in attrs.items()}}
    s = {"traceId": "t", "startTimeUnixNano": start, "endTimeUnixNano": end,
         "attributes": [_attr(k, v) for k, v in values.items() if v is not None]}
    return s if span_id is None else {"spanId": span_id, **s}


def otlp(*spans):
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def session(**over):
    line = {"session_id": "s1", "system_tokens": 10, "user_tokens": 5, "assistant_tokens": 3, "cached_input_tokens": 4,
            **over}
    return {k: v for k, v in line.items() if v != "absent"}


# --- the rules, per format: (branch, line, reason) --------------------------------------------------------

CASES = {
    "openai": [  # ingest/openai.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("no response object", {"session_id": "s"}, 'no "response" object (not an OpenAI log envelope)'),
        ("valid JSON that is not an object", "[1, 2]", 'no "response" object (not an OpenAI log envelope)'),
        ("error response", envelope(response={"error": {"message": "x"}}), "error response, no usage"),
        ("response without usage", envelope(response={"id": "x"}), "response has no usage"),
        ("usage without any count", envelope({"total_tokens": 5}), "usage has no token counts"),
        ("Anthropic usage keys", envelope({"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 3}),
         "Anthropic-style usage (input_tokens excludes cache reads) in an OpenAI log: use --format anthropic"),
        ("Anthropic response type", envelope(response={"type": "message", "usage": {"prompt_tokens": 5, "completion_tokens": 1}}),
         "Anthropic-style usage (input_tokens excludes cache reads) in an OpenAI log: use --format anthropic"),
        ("no input count", envelope({"completion_tokens": 5}), "usage has neither prompt_tokens nor input_tokens"),
        ("no output count", envelope({"prompt_tokens": 5}),
         "usage has neither completion_tokens nor output_tokens (not a generation call?)"),
        ("prompt_tokens check", openai_env(prompt_tokens=-1), "usage.prompt_tokens is negative (-1)"),
        ("cached_tokens check", openai_env(prompt_tokens_details={"cached_tokens": 1.5}),
         "usage.prompt_tokens_details.cached_tokens is not an integer (got 1.5)"),
        ("completion_tokens check", openai_env(completion_tokens=-2), "usage.completion_tokens is negative (-2)"),
        ("system_tokens check", dict(openai_env(), system_tokens=-3), "system_tokens is negative (-3)"),
        ("timestamp check", dict(openai_env(), timestamp="yesterday"), "timestamp is not a time (got yesterday)"),
        ("disconnected_at check", dict(openai_env(), disconnected_at="soon"), "disconnected_at is not a time (got soon)"),
        ("cached > prompt", openai_env(prompt_tokens_details={"cached_tokens": 11}), "cached_tokens (11) > prompt_tokens (10)"),
        ("system > prompt", dict(openai_env(), system_tokens=11), "system_tokens (11) > prompt_tokens (10)"),
    ],
    "anthropic": [  # ingest/anthropic.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("error response type", envelope(response={"type": "error", "error": {"type": "overloaded_error"}}),
         "error response, no usage"),
        ("OpenAI usage keys", anthropic_env(prompt_tokens=5),
         "OpenAI-style usage (prompt_tokens includes the cache) in an Anthropic log: use --format openai"),
        ("no response object", {"session_id": "s"}, 'no "response" object (not an Anthropic log envelope)'),
        ("error object", envelope(response={"error": {"message": "x"}}), "error response, no usage"),
        ("response without usage", envelope(response={"id": "x"}), "response has no usage"),
        ("usage without input or output", envelope({"cache_read_input_tokens": 5}), "usage has no token counts"),
        ("no input_tokens", envelope({"output_tokens": 5}), "usage.input_tokens missing"),
        ("no output_tokens", envelope({"input_tokens": 5}), "usage.output_tokens missing"),
        ("input_tokens check", anthropic_env(input_tokens=-1), "usage.input_tokens is negative (-1)"),
        ("cache_read_input_tokens check", anthropic_env(cache_read_input_tokens=-2),
         "usage.cache_read_input_tokens is negative (-2)"),
        ("negative cache_creation_input_tokens", anthropic_env(cache_creation_input_tokens=-3),
         "usage.cache_creation_input_tokens is negative (-3)"),
        ("output_tokens check", anthropic_env(output_tokens=-4), "usage.output_tokens is negative (-4)"),
        ("system_tokens check", dict(anthropic_env(), system_tokens=-5), "system_tokens is negative (-5)"),
        ("timestamp check", dict(anthropic_env(), timestamp="yesterday"), "timestamp is not a time (got yesterday)"),
        ("disconnected_at check", dict(anthropic_env(), disconnected_at="soon"), "disconnected_at is not a time (got soon)"),
        ("system > whole input", dict(anthropic_env(cache_read_input_tokens=5), system_tokens=16),
         "system_tokens (16) > total input (15)"),
    ],
    "openai-chat": [  # ingest/openai_object.sql + ingest/calls_from_usage.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("not an object", "[1]", "not a JSON object"),
        ("line-level error", {"id": "x", "error": {"code": "rate_limit", "message": "slow down"}},
         "error response: rate_limit: slow down"),
        ("failed status", {"object": "chat.completion", "status": "failed", "error": {"code": "e", "message": "boom"}},
         "response failed: e: boom"),
        ("error without code", {"object": "chat.completion", "error": {"message": "bad"}}, "error response: bad"),
        ("another object", {"object": "embedding", "usage": {"prompt_tokens": 1}},
         'object is "embedding", not a chat.completion or response'),
        ("no usage", {"object": "chat.completion", "model": "m"}, "response has no usage"),
        ("no input count", {"object": "chat.completion", "usage": {"completion_tokens": 2}}, "usage.prompt_tokens missing"),
        ("no output count", {"object": "chat.completion", "usage": {"prompt_tokens": 2}}, "usage.completion_tokens missing"),
        ("no input count in a Responses object", {"object": "response", "status": "completed",
                                                   "usage": {"output_tokens": 2}}, "usage.input_tokens missing"),
        ("prompt_tokens check", chat(prompt_tokens=-1), "usage.prompt_tokens is negative (-1)"),
        ("cached_tokens check", chat(prompt_tokens_details={"cached_tokens": -1}),
         "usage.prompt_tokens_details.cached_tokens is negative (-1)"),
        ("completion_tokens check", chat(completion_tokens=-1), "usage.completion_tokens is negative (-1)"),
        ("time check (--time-key default)", dict(chat(), created="yesterday"), "$.created is not a time (got yesterday)"),
        ("cached > prompt", chat(prompt_tokens_details={"cached_tokens": 11}),
         "usage.prompt_tokens_details.cached_tokens (11) > usage.prompt_tokens (10)"),
    ],
    "openai-response": [
        ("cancelled status, no message", dict(response_obj(), status="cancelled"), "response cancelled: (no message)"),
        ("cached > input", response_obj(input_tokens_details={"cached_tokens": 11}),
         "usage.input_tokens_details.cached_tokens (11) > usage.input_tokens (10)"),
        ("input cached_tokens check", response_obj(input_tokens_details={"cached_tokens": 1.5}),
         "usage.input_tokens_details.cached_tokens is not an integer (got 1.5)"),
        ("output_tokens check", response_obj(output_tokens="x"), "usage.output_tokens is not an integer (got x)"),
        ("created_at check", dict(response_obj(), created_at=-5), "$.created_at is not a time (got -5)"),
    ],
    "openai-batch": [
        ("no custom_id", {"id": "b", "response": {"status_code": 200, "body": chat()}},
         "not an OpenAI Batch output line (no custom_id)"),
        ("batch error", batch_line(error={"code": "batch_expired", "message": "too late"}),
         "batch error batch_expired: too late"),
        ("status code not 200", {"id": "b", "custom_id": "c2", "response": {"status_code": 429, "body": {"error": {"message": "rate"}}}},
         "status_code 429: rate"),
        ("no response", {"id": "b", "custom_id": "c3", "response": None, "error": None}, "status_code missing: (no message)"),
        ("body not an object", batch_line("text"), "no response object"),
        ("body usage check", batch_line(chat(prompt_tokens=-7)), "usage.prompt_tokens is negative (-7)"),
    ],
    "anthropic-message": [  # ingest/anthropic_message.sql + ingest/calls_from_usage.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("not an object", "3", "not a JSON object"),
        ("error object", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}},
         "error response: overloaded_error: busy"),
        ("another type", {"type": "completion", "usage": {"input_tokens": 1, "output_tokens": 1}},
         'type is "completion", not a message'),
        ("OpenAI usage keys", message(prompt_tokens=4),
         "OpenAI-style usage (prompt_tokens includes the cache) in an Anthropic Message: wrong --format?"),
        ("no usage", {"type": "message", "model": "c"}, "message has no usage"),
        ("usage without input or output", {"type": "message", "usage": {"cache_read_input_tokens": 5}},
         "message has no usage"),
        ("no input_tokens", message(input_tokens=None), "usage.input_tokens missing"),
        ("no output_tokens", message(output_tokens=None), "usage.output_tokens missing"),
        ("input_tokens check", message(input_tokens=-1), "usage.input_tokens is negative (-1)"),
        ("cache_read_input_tokens check", message(cache_read_input_tokens=-1),
         "usage.cache_read_input_tokens is negative (-1)"),
        ("negative cache_creation_input_tokens", message(cache_creation_input_tokens=-1),
         "usage.cache_creation_input_tokens is negative (-1)"),
        ("output_tokens check", message(output_tokens=-1), "usage.output_tokens is negative (-1)"),
    ],
    "anthropic-batch": [
        ("no result.type", {"custom_id": "c"}, "not an Anthropic Message Batch result line (no result.type)"),
        ("errored", {"custom_id": "c", "result": {"type": "errored", "error": {"type": "error", "error": {
            "type": "invalid_request_error", "message": "bad"}}}}, "result errored: invalid_request_error: bad"),
        ("canceled", {"custom_id": "c", "result": {"type": "canceled"}}, "result canceled"),
        ("expired", {"custom_id": "c", "result": {"type": "expired"}}, "result expired"),
        ("succeeded without a message", {"custom_id": "c", "result": {"type": "succeeded"}}, "no Message object"),
        ("negative cache_creation_input_tokens in a result", message_result(message(cache_creation_input_tokens=-2)),
         "usage.cache_creation_input_tokens is negative (-2)"),
    ],
    "litellm": [  # ingest/litellm.sql + ingest/calls_from_usage.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("not an object", "[]", "not a JSON object"),
        ("not a LiteLLM line", {"id": "x", "model": "m"}, "not a LiteLLM log line (no call_type, no prompt_tokens)"),
        ("failure", litellm(status="failure", error_str="timeout"), "status failure: timeout"),
        ("failure without error_str", litellm(status="failure"), "status failure: (no error_str)"),
        ("response-cache hit", litellm(cache_hit=True), "cache_hit: answered from LiteLLM's response cache, no model call"),
        ("no prompt_tokens", litellm(prompt_tokens=None), "prompt_tokens missing"),
        ("no completion_tokens", litellm(completion_tokens=None), "completion_tokens missing"),
        ("prompt_tokens check", litellm(prompt_tokens=-1), "prompt_tokens is negative (-1)"),
        ("completion_tokens check", litellm(completion_tokens=-1), "completion_tokens is negative (-1)"),
        ("cached_tokens check", usage_object(prompt_tokens_details={"cached_tokens": -1}),
         "usage_object.prompt_tokens_details.cached_tokens is negative (-1)"),
        ("cache_read_input_tokens check", usage_object(cache_read_input_tokens=1.5),
         "usage_object.cache_read_input_tokens is not an integer (got 1.5)"),
        ("cache_creation_input_tokens check", usage_object(cache_creation_input_tokens=-3),
         "usage_object.cache_creation_input_tokens is negative (-3)"),
        ("startTime check", litellm(startTime="yesterday"), "$.startTime is not a time (got yesterday)"),
        ("endTime check", litellm(endTime="later"), "end time is not a time (got later)"),
        ("cache reads + writes > prompt_tokens (writes left out of prompt_tokens)",
         usage_object(prompt_tokens_details={"cached_tokens": 8}, cache_creation_input_tokens=5),
         "usage_object.prompt_tokens_details.cached_tokens (8) + usage_object.cache_creation_input_tokens (5) > prompt_tokens (10)"),
        ("metadata as JSON text (spend-log row)",
         litellm(metadata='{"usage_object": {"prompt_tokens_details": {"cached_tokens": 11}}}'),
         "usage_object.prompt_tokens_details.cached_tokens (11) > prompt_tokens (10)"),
    ],
    "langfuse": [  # ingest/langfuse.sql + ingest/calls_from_usage.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("not an object", "1", "not a JSON object"),
        ("no type", {"id": "o"}, "not a Langfuse observation (no type)"),
        ("level ERROR", langfuse(level="ERROR", statusMessage="boom"), "level ERROR: boom"),
        ("level ERROR without message", langfuse(level="ERROR"), "level ERROR: (no statusMessage)"),
        ("no usageDetails", langfuse(usageDetails=None), "generation has no usageDetails"),
        ("usageDetails not an object", langfuse(usageDetails=[1]), "generation has no usageDetails"),
        ("input check", langfuse(usageDetails={"input": -1, "output": 2}), "usageDetails.input is negative (-1)"),
        ("output check", langfuse(usageDetails={"input": 1, "output": "x"}), "usageDetails.output is not an integer (got x)"),
        ("cache-read key check", langfuse(usageDetails={"input": 1, "input_cached_tokens": 1.5, "output": 1}),
         "usageDetails.input_cached_tokens is not an integer (got 1.5)"),
        ("no input key", langfuse(usageDetails={"output": 2}), "usageDetails.input missing"),
        ("no output key", langfuse(usageDetails={"input": 2}), "usageDetails.output missing"),
        ("startTime check", langfuse(startTime="yesterday"), "$.startTime is not a time (got yesterday)"),
        ("endTime check", langfuse(endTime="later"), "end time is not a time (got later)"),
    ],
    "otel": [  # ingest/otel.sql: a rejected span is reported at its export's line
        ("malformed JSON", "{not json", "malformed JSON"),
        ("not an OTLP export", {"other": 1}, "not an OTLP trace export (no resourceSpans)"),
        ("no input_tokens", otlp(span("b1", gen_ai__usage__input_tokens=None)), "span 1 (b1): gen_ai.usage.input_tokens missing"),
        ("no output_tokens", otlp(span("b2", gen_ai__usage__output_tokens=None)), "span 1 (b2): gen_ai.usage.output_tokens missing"),
        ("input_tokens check", otlp(span("b3", gen_ai__usage__input_tokens=-1)),
         "span 1 (b3): gen_ai.usage.input_tokens is negative (-1)"),
        ("output_tokens check", otlp(span("b4", gen_ai__usage__output_tokens="x")),
         "span 1 (b4): gen_ai.usage.output_tokens is not an integer (got x)"),
        ("cache_read check", otlp(span("b5", gen_ai__usage__cache_read__input_tokens=1.5)),
         "span 1 (b5): gen_ai.usage.cache_read.input_tokens is not an integer (got 1.5)"),
        ("cache_creation check", otlp(span("b6", gen_ai__usage__cache_creation__input_tokens=-2)),
         "span 1 (b6): gen_ai.usage.cache_creation.input_tokens is negative (-2)"),
        ("start time check", otlp(span("b7", start="yesterday")), 'span 1 (b7): startTimeUnixNano is not a time (got "yesterday")'),
        ("end time check", otlp(span("b8", end="later")), 'span 1 (b8): endTimeUnixNano is not a time (got "later")'),
        ("cache_read > input", otlp(span("b9", gen_ai__usage__cache_read__input_tokens=11)),
         "span 1 (b9): gen_ai.usage.cache_read.input_tokens (11) > gen_ai.usage.input_tokens (10)"),
        ("span without an id", otlp(span(None, gen_ai__usage__input_tokens=None)),
         "span 1 (no spanId): gen_ai.usage.input_tokens missing"),
        ("second span of an export", otlp(span("ok2"), span("c2", gen_ai__usage__output_tokens=None)),
         "span 2 (c2): gen_ai.usage.output_tokens missing"),
    ],
    "sessions": [  # ingest/sessions_format_jsonl.sql + ingest/sessions_format.sql
        ("malformed JSON", "{not json", "malformed JSON"),
        ("no session_id", session(session_id="absent"), "session_id missing"),
        ("null session_id", session(session_id=None), "session_id missing"),
        ("not an object", "[1]", "session_id missing"),
        ("no system_tokens", session(system_tokens="absent"), "system_tokens missing"),
        ("no user_tokens", session(user_tokens="absent"), "user_tokens missing"),
        ("no assistant_tokens", session(assistant_tokens="absent"), "assistant_tokens missing"),
        ("no cached_input_tokens", session(cached_input_tokens="absent"), "cached_input_tokens missing"),
        ("system_tokens check", session(system_tokens=-1), "system_tokens is negative (-1)"),
        ("user_tokens check (a string is not a count)", session(user_tokens="5"), 'user_tokens is not an integer (got "5")'),
        ("assistant_tokens check", session(assistant_tokens=1.5), "assistant_tokens is not an integer (got 1.5)"),
        ("cached_input_tokens check", session(cached_input_tokens=1e300),
         "cached_input_tokens is out of range (got 1e300; a token count is at most 10,000,000,000)"),
        ("first_seen check", session(first_seen="yesterday"), 'first_seen is not a time (got "yesterday")'),
        ("last_activity check", session(last_activity="later"), 'last_activity is not a time (got "later")'),
        ("disconnected_at check", session(disconnected_at=True), "disconnected_at is not a time (got true)"),
        ("cached > system + user", session(cached_input_tokens=16), "cached_input_tokens (16) > system_tokens + user_tokens (15)"),
    ],
}
GOOD = {"openai": openai_env(), "anthropic": anthropic_env(), "openai-chat": chat(), "openai-response": response_obj(),
        "openai-batch": batch_line(), "anthropic-message": message(), "anthropic-batch": message_result(),
        "litellm": litellm(), "langfuse": langfuse(), "otel": otlp(span()), "sessions": session()}

# The value macros (setup/macros.sql), each kind once, through one field: every reader converts through them.
MACRO_KINDS = [
    ("negative", -1, "is negative (-1)"),
    ("a fraction", 2.5, "is not an integer (got 2.5)"),
    ("text", "ten", "is not an integer (got ten)"),
    ("not finite", "nan", "is not a finite number (got nan)"),
    ("infinite text", "-Infinity", "is not a finite number (got -Infinity)"),
    ("too large for a double", "1e999", "is out of range (got 1e999)"),
    ("over ten billion", 2e10, "is out of range (got 20000000000.0; a token count is at most 10,000,000,000)"),
]


def audit_rejects(tmp_path, fmt: str, lines: list, suffix: str = ".jsonl") -> dict[int, str]:
    log = tmp_path / f"log{suffix}"
    log.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines), encoding="utf-8")
    db = tmp_path / "a.duckdb"
    quiet_audit([log], fmt=fmt, db=db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        return dict(con.execute("SELECT line, reason FROM token_rejects ORDER BY line").fetchall())
    finally:
        con.close()


def _check(got: dict, cases: list, first: int = 2):
    want = {first + i: reason for i, (_, _, reason) in enumerate(cases)}
    wrong = [f"line {n} ({cases[n - first][0]}): want {want.get(n)!r}, got {got.get(n)!r}"
             for n in sorted(set(want) | set(got)) if want.get(n) != got.get(n)]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("fmt", list(CASES))
def test_every_reject_rule(tmp_path, fmt):
    cases = CASES[fmt]
    _check(audit_rejects(tmp_path, fmt, [GOOD[fmt]] + [line for _, line, _ in cases]), cases)


@pytest.mark.parametrize("kind, value, reason", MACRO_KINDS, ids=[k[0] for k in MACRO_KINDS])
def test_every_kind_of_bad_count(tmp_path, kind, value, reason):
    """Each kind of bad count once, through usage.prompt_tokens of an OpenAI envelope."""
    raw = '{"session_id": "s", "response": {"usage": {"prompt_tokens": %s, "completion_tokens": 2}}}' % (
        value if isinstance(value, (int, float)) or value == "1e999" else json.dumps(value))
    got = audit_rejects(tmp_path, "openai", [GOOD["openai"], raw])
    assert got == {2: f"usage.prompt_tokens {reason}"}


SESSION_HEADER = "session_id,system_tokens,user_tokens,assistant_tokens,cached_input_tokens,first_seen"
CSV_CASES = [  # ingest/sessions_format_csv.sql (ingest.py splits the records) + ingest/sessions_format.sql
    ("empty session_id", ",10,5,3,4,", "session_id missing"),
    ("empty system_tokens", "s3,,5,3,4,", "system_tokens missing"),
    ("text count", "s4,10,five,3,4,", 'user_tokens is not an integer (got "five")'),
    ("bad time", "s5,10,5,3,4,yesterday", 'first_seen is not a time (got "yesterday")'),
    ("more fields than the header", "s6,10,5,3,4,2025-01-01T00:00:00Z,extra", "more fields than the header has columns"),
    ("a fraction", "s7,10,5,3.5,4,", "assistant_tokens is not an integer (got 3.5)"),
    ("cached > input", "s8,10,5,3,99,", "cached_input_tokens (99) > system_tokens + user_tokens (15)"),
]


def test_every_sessions_csv_rule(tmp_path):
    lines = [SESSION_HEADER, "s1,10,5,3,4,2025-01-01T00:00:00Z"] + [line for _, line, _ in CSV_CASES]
    _check(audit_rejects(tmp_path, "sessions", lines, suffix=".csv"), CSV_CASES, first=3)


PARQUET_CASES = [  # ingest/sessions_format_parquet.sql: typed columns keep their JSON type
    ("null session_id", (None, 10.0, 5, "3"), "session_id missing"),
    ("a fractional DOUBLE", ("s3", 12.5, 5, "3"), "system_tokens is not an integer (got 12.5)"),
    ("negative", ("s4", 10.0, -5, "3"), "user_tokens is negative (-5)"),
    ("a text column", ("s5", 10.0, 5, "3"), 'assistant_tokens is not an integer (got "3")'),
]


def _parquet(path: Path, columns: str, rows: list) -> Path:
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t ({columns})")
    con.executemany(f"INSERT INTO t VALUES ({', '.join('?' for _ in rows[0])})", rows)
    con.execute(f"COPY (SELECT *, 1 AS cached_input_tokens FROM t) TO '{path}' (FORMAT PARQUET)")
    con.close()
    return path


def test_every_sessions_parquet_rule(tmp_path):
    """Typed columns: a VARCHAR column holds no counts at all, so the valid record comes from a second file;
    a session_id column of another type (here BOOLEAN) names no session."""
    typed = _parquet(tmp_path / "sessions.parquet",
                     "session_id VARCHAR, system_tokens DOUBLE, user_tokens BIGINT, assistant_tokens VARCHAR",
                     [r for _, r, _ in PARQUET_CASES])
    flag = _parquet(tmp_path / "flag.parquet", "session_id BOOLEAN, system_tokens BIGINT, user_tokens BIGINT, "
                    "assistant_tokens BIGINT", [(True, 10, 5, 3)])
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps(GOOD["sessions"]) + "\n", encoding="utf-8")
    db = tmp_path / "a.duckdb"
    quiet_audit([good, typed, flag], db=db)
    con = duckdb.connect(str(db), read_only=True)
    rejects = con.execute("SELECT source, line, reason FROM token_rejects ORDER BY source, line").fetchall()
    con.close()
    _check({line: reason for source, line, reason in rejects if source == str(typed)}, PARQUET_CASES, first=1)
    assert [(line, reason) for source, line, reason in rejects if source == str(flag)] == [(1, "session_id missing")]


@pytest.mark.parametrize("fmt, good, bad", [
    ("openai", openai_env(), dict(openai_env(), meta={"t": "yesterday"})),          # ingest/rekey.sql over an envelope
    ("anthropic", anthropic_env(), dict(anthropic_env(), meta={"t": "yesterday"})),
    ("openai-chat", chat(), dict(chat(), meta={"t": "yesterday"})),                # ingest/calls_from_usage.sql's label
])
def test_a_bad_time_at_the_users_time_key_is_a_reject_naming_the_key(tmp_path, fmt, good, bad):
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(dict(x, meta=x.get("meta", {"t": "2025-01-01T00:00:00Z"}))) + "\n"
                           for x in (good, bad)), encoding="utf-8")
    db = tmp_path / "a.duckdb"
    quiet_audit([log], fmt=fmt, db=db, time_key="meta.t")
    con = duckdb.connect(str(db), read_only=True)
    got = dict(con.execute("SELECT line, reason FROM token_rejects").fetchall())
    con.close()
    assert got == {2: "$.meta.t is not a time (got yesterday)"}


def test_an_otlp_document_reports_its_rejected_spans(tmp_path):
    """An export written as one pretty-printed JSON document (ingest/read_document.sql): each bad span is a reject with
    its position and id."""
    doc = tmp_path / "trace.json"
    doc.write_text(json.dumps(otlp(span(), span("d2", gen_ai__usage__input_tokens=-4)), indent=2), encoding="utf-8")
    db = tmp_path / "a.duckdb"
    quiet_audit([doc], db=db)
    con = duckdb.connect(str(db), read_only=True)
    got = [r[0] for r in con.execute("SELECT reason FROM token_rejects").fetchall()]
    con.close()
    assert got == ["span 2 (d2): gen_ai.usage.input_tokens is negative (-4)"]


def test_a_negative_cache_write_never_reaches_a_session(tmp_path):
    """The Anthropic rule the issue names: with its check dropped the line became a call and its session's
    PCER 166.7%. Rejected, the session is absent and no stored PCER exceeds 1."""
    bad = dict(anthropic_env(input_tokens=100, cache_read_input_tokens=500, cache_creation_input_tokens=-300),
               session_id="neg")
    got = audit_rejects(tmp_path, "anthropic", [GOOD["anthropic"], bad])
    assert got == {2: "usage.cache_creation_input_tokens is negative (-300)"}
    con = duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True)
    try:
        assert con.execute("SELECT count(*) FROM token_audit WHERE session_id = 'neg'").fetchone()[0] == 0
        assert con.execute("SELECT max(pcer) FROM token_audit").fetchone()[0] <= 1
    finally:
        con.close()


# --- coverage of the SQL itself ---------------------------------------------------------------------------

READERS = {  # which SQL files produce each format's reasons
    "ingest/openai_calls.sql": ["openai"], "ingest/anthropic.sql": ["anthropic"],
    "ingest/openai_object_rows.sql": ["openai-chat", "openai-response", "openai-batch"],
    "ingest/openai_object_record.sql": ["openai-chat", "openai-response", "openai-batch"],
    "ingest/anthropic_message_rows.sql": ["anthropic-message", "anthropic-batch"],
    "ingest/litellm_rows.sql": ["litellm"], "ingest/langfuse.sql": ["langfuse"], "ingest/otel.sql": ["otel"],
    "ingest/sessions_format.sql": ["sessions"], "ingest/sessions_format_jsonl.sql": ["sessions"], "ingest/sessions_format_csv.sql": ["sessions-csv"],
    "ingest/usage_calls.sql": ["openai-chat", "openai-response", "openai-batch", "anthropic-message",
                             "anthropic-batch", "litellm", "langfuse"],
}


def _reasons(fmt: str) -> list[str]:
    if fmt == "sessions-csv":
        return [r for _, _, r in CSV_CASES]
    return [r for _, _, r in CASES[fmt]]


def _code(sql: str) -> str:
    """The SQL without its comments (a "--" inside a string, as in "use --format openai", stays)."""
    return re.sub(r"'(?:[^']|'')*'|--[^\n]*", lambda m: m.group(0) if m.group(0).startswith("'") else "", sql)


def _literals(sql: str) -> list[str]:
    """The strings reject CASE branches start with (`THEN 'reason...'`, `ELSE 'reason...'`)."""
    return re.findall(r"(?:THEN|ELSE)\s+(?:format\()?'((?:[^']|'')*)'", sql)


def test_every_reject_literal_in_the_ingest_sql_has_a_fixture():
    """Each string a reject CASE branch starts with (`THEN 'reason...'`, `ELSE 'reason...'`) is in some
    expected reason of the formats that file reads: a new rule without a fixture fails here."""
    with_reasons = {f"ingest/{p.name}" for p in (SQL / "ingest").glob("*.sql") if _literals(_code(p.read_text()))}
    assert set(READERS) >= with_reasons, "a new ingest file with reject reasons: add its formats here"
    missing = []
    for name, formats in READERS.items():
        sql = _code((SQL / name).read_text(encoding="utf-8"))
        expected = [r for f in formats for r in _reasons(f)]
        for literal in _literals(sql):
            text = literal.replace("''", "'").split("{}")[0]
            # reasons are phrases (or start one: 'result ' || type); single words are labels (a usage kind)
            if " " in text and not any(text in r for r in expected):
                missing.append(f"{name}: {text!r}")
    assert not missing, "reject rules without a fixture line:\n" + "\n".join(missing)


# kv_sts's fast cast of plain UTC times (setup/macros.sql, kv_plain_utc): each string ends in 'Z', so before
# that cast kv_ts_text alone read it; the cast must give exactly what kv_ts_text gives, in and out of its shape.
PLAIN_UTC = ["2025-06-02T10:00:00Z", "2025-06-02T10:00:00.123456Z", "2025-06-02T10:00:00.5Z",
             "2099-12-31T23:59:59.999999Z", "2000-01-01T00:00:00Z",
             "1999-12-31T23:59:59Z", "2100-01-01T00:00:00Z",           # read by the cast, outside kv_in_window
             "2025-02-30T10:00:00Z", "2025-06-02T25:00:00Z",           # the shape, not a time
             "2025-06-02T10:00:00 Europe/BerlinZ", "2025-06-02T10:00:00 Z",  # the cast would drop what follows a space
             "2025-06-02T10:00:00+02:00Z", "2025-06-02T10:00:00.1234567Z", "2025-06-02 10:00:00Z", "12345Z"]


def test_plain_utc_times_read_as_the_full_time_parser_reads_them():
    from kvreport.runner.audit.sqlfiles import run_sql

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    run_sql(con, "setup/macros")
    got = con.execute("SELECT s, kv_sts(s), kv_ts_text(s) FROM unnest(?::VARCHAR[]) t(s)", [PLAIN_UTC]).fetchall()
    assert [(s, fast) for s, fast, full in got if fast != full] == []
    read = {s for s, fast, _ in got if fast is not None}
    assert set(PLAIN_UTC[:5]) <= read and not read & set(PLAIN_UTC[5:12])  # times in the window only


def _damaged(rng: random.Random, base: str, alphabet: str) -> str:
    """`base` with one to three characters replaced, inserted or deleted at random."""
    s = list(base)
    for _ in range(rng.randint(1, 3)):
        op, i = rng.random(), rng.randrange(len(s))
        if op < 0.4:
            s[i] = rng.choice(alphabet)
        elif op < 0.7:
            s.insert(i, rng.choice(alphabet))
        else:
            del s[i]
    return "".join(s)


def _damaged_times(n_per_base: int, seed: int) -> list[str]:
    """Logged times with one to three characters changed, inserted or deleted (digits, separators, spaces,
    letters, a NUL): texts near the shape kv_sts reads with strptime, on both sides of it."""
    rng = random.Random(seed)
    alphabet = "0123456789-T:Z .+tz/\t\x00aé"
    out = set()
    for base in ("2025-06-02T10:00:00Z", "1999-12-31T23:59:59Z", "2099-12-31T23:59:59Z", "2100-01-01T00:00:00Z",
                 "2000-01-01T00:00:00Z", "2024-02-29T12:34:56Z", "2023-02-29T12:34:56Z"):
        out.add(base)
        out.update(_damaged(rng, base, alphabet) for _ in range(n_per_base))
    return sorted(out)


def test_the_strptime_fast_path_reads_every_time_as_the_general_path_does():
    """kv_sts reads '...T10:00:00Z' with try_strptime and the rest with kv_sts_any: for every text (damaged
    times around that shape) the two must agree, and strptime must have read some of them in and out of the window."""
    from kvreport.runner.audit.sqlfiles import run_sql

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    run_sql(con, "setup/macros")
    texts = _damaged_times(7_000, seed=26)
    differ = con.execute("SELECT s, kv_sts(s), kv_sts_any(s) FROM unnest(?::VARCHAR[]) t(s) "
                         "WHERE kv_sts(s) IS DISTINCT FROM kv_sts_any(s)", [texts]).fetchall()
    assert differ == []
    read, in_window = con.execute(
        "SELECT count(*), count(*) FILTER (WHERE kv_in_window(try_strptime(s, '%Y-%m-%dT%H:%M:%SZ')) IS NOT NULL) "
        "FROM unnest(?::VARCHAR[]) t(s) WHERE try_strptime(s, '%Y-%m-%dT%H:%M:%SZ') IS NOT NULL", [texts]).fetchone()
    assert 0 < in_window < read


def test_plain_utc_times_out_of_the_window_or_the_calendar_are_rejects(tmp_path):
    times = PLAIN_UTC[5:10]
    got = audit_rejects(tmp_path, "openai", [GOOD["openai"]] + [dict(openai_env(), timestamp=t) for t in times])
    assert got == {2 + i: f"timestamp is not a time (got {t})" for i, t in enumerate(times)}


# Every form of logged time kv_sts reads by its own cheap branch (setup/macros.sql), damaged around its shape.
TIME_FORMS = ("2025-06-02T10:00:00.123Z", "2025-06-02T12:00:00+02:00", "2025-06-02T04:30:00.123456-05:30",
              "2025-06-02 10:00:00.123456", "2025-06-02T10:00:00", "2025-06-02T10:00:00+14:00",
              "2025-06-02T10:00:00-14:01", "1999-12-31T23:59:59.5+00:00", "2099-12-31T23:59:59.999999Z",
              "1748858400", "1748858400.123", "1748858400123", "1748858400123.5", "1748858400123456",
              "946684799", "4102444800000")


def test_every_time_form_reads_as_the_general_path_reads_it():
    """kv_sts reads ISO texts in their strict form and Unix digits without kv_sts_any's tests: for every text
    (damaged times of each form, both sides of the strict shape, the window and the ±14:00 offsets) the two must
    agree, and each branch must have read some of them."""
    from kvreport.runner.audit.sqlfiles import run_sql

    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    run_sql(con, "setup/macros")
    rng = random.Random(39)
    alphabet = "0123456789-T:Z .+e/\t\x00"
    texts = set(TIME_FORMS)
    for base in TIME_FORMS:
        texts.update(_damaged(rng, base, alphabet) for _ in range(5_000))
    texts = sorted(texts)
    differ = con.execute("SELECT s, kv_sts(s), kv_sts_any(s) FROM unnest(?::VARCHAR[]) t(s) "
                         "WHERE kv_sts(s) IS DISTINCT FROM kv_sts_any(s)", [texts]).fetchall()
    assert differ == []
    iso, digits = con.execute(
        "SELECT count(*) FILTER (WHERE contains(s, '-') AND kv_iso_strict(s) AND kv_sts(s) IS NOT NULL), "
        "count(*) FILTER (WHERE regexp_full_match(s, '[0-9]+(\\.[0-9]+)?') AND kv_sts(s) IS NOT NULL) "
        "FROM unnest(?::VARCHAR[]) t(s)", [texts]).fetchone()
    assert iso > 500 and digits > 500
    nulls = [r[0] for r in con.execute("SELECT kv_sts(s) IS NULL FROM unnest(?::VARCHAR[]) t(s)",
                                       [list(TIME_FORMS)]).fetchall()]
    # read: all but the offset beyond -14:00 and the times outside 2000..2099
    assert nulls == [False] * 6 + [True, True] + [False] * 6 + [True, True]
