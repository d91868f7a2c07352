"""The shape readers take their default session and time keys from the line's one parse (json_transform's text
leaves) instead of extracting the key paths again (sql/ingest/shape_lines.sql, keys_known): the two must give
the same text for every value a log can hold there, and an audit with the defaults must equal one whose keys,
spelled differently, are extracted by path."""
from __future__ import annotations

import json

import duckdb

from conftest import quiet_audit

VALUES = ['"s-1"', '"s \\"q\\" \\u00e9 \\ud83d\\ude00"', '""', "12", "-0", "1.50", "1e3", "1748858400.123456",
          "12345678901234567890123", "true", "null", '{"a": [1, {"b": null}]}', "[1, 2]", '{ "x" : 1 }']


def test_a_text_leaf_of_the_parse_is_the_extracted_text():
    con = duckdb.connect()
    rows = [f'{{"k": {v}, "m": {{"k": {v}}}}}' for v in VALUES]
    got = con.execute("""SELECT raw, json_transform(raw, '{"k": "VARCHAR", "m": {"k": "VARCHAR"}}') AS x,
                                json_extract_string(raw, ['$.k', '$.m.k']) AS e
                         FROM unnest(?::VARCHAR[]) t(raw)""", [rows]).fetchall()
    assert [(raw, x["k"], x["m"]["k"]) for raw, x, e in got if [x["k"], x["m"]["k"]] != e] == []


def _lines(shape: str) -> list[dict]:
    out = []
    for i, v in enumerate(VALUES):
        value = json.loads(v)
        if shape == "openai-chat":
            out.append({"id": f"c{i}", "object": "chat.completion", "created": 1748858400 + i, "model": "gpt-4o",
                        "usage": {"prompt_tokens": 10, "completion_tokens": 2},
                        "metadata": {"session_id": value} if i % 3 else {"conversation_id": value}})
        else:
            out.append({"call_type": "acompletion", "status": "success", "prompt_tokens": 10, "completion_tokens": 2,
                        "startTime": 1748858400.5 + i, **({"session_id": value} if i % 2 else {"trace_id": value})})
    return out


def _calls(tmp_path, shape: str, name: str, **keys) -> list[tuple]:
    (tmp_path / name).mkdir()
    log = tmp_path / name / "log.jsonl"  # the same name: calls without a session are named after it
    log.write_text("".join(json.dumps(x) + "\n" for x in _lines(shape)), encoding="utf-8")
    db = tmp_path / f"{name}.duckdb"
    quiet_audit([log], fmt=shape, db=db, **keys)
    with duckdb.connect(str(db), read_only=True) as c:
        return c.execute("SELECT line, session_id, start_time FROM token_calls ORDER BY line").fetchall()


def test_default_keys_from_the_parse_equal_the_keys_extracted_by_path(tmp_path):
    chat = dict(session_keys=['$."metadata".session_id', '$."metadata".conversation_id'], time_key='$."created"')
    litellm = dict(session_keys=['$."session_id"', '$."trace_id"'], time_key='$."startTime"')
    for shape, keys in (("openai-chat", chat), ("litellm", litellm)):
        default = _calls(tmp_path, shape, shape + "-default")
        assert len(default) == len(VALUES)
        assert default == _calls(tmp_path, shape, shape + "-paths", **keys)
