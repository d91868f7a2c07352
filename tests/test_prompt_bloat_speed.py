"""The fast paths of the prompt-bloat steps give what the plain definitions give (issue 12).

bloat/content.sql reads plain messages as whole lists and every other call one row per message; bloat/pairs.sql finds
lcp_chars message by message and then within one message's line. Both are checked here against the
definitions spelled out: the per-message statement for every call, and the common prefix of the rebuilt
prompt texts, character by character in Python.
"""
from __future__ import annotations

import json
import os
import random

import pytest

from conftest import quiet_audit

WORDS = "alpha beta gamma Reply in JSON please . You are a bot Time : é ü 😀 tool ok".split()


def _log(path) -> None:
    rnd = random.Random(12)

    def text(n):
        return " ".join(rnd.choice(WORDS) for _ in range(n))

    lines = []
    for s in range(60):
        hist: list = []
        for k in range(rnd.randint(1, 7)):
            r = rnd.random()
            if r < 0.45:
                hist.append({"role": "user", "content": text(rnd.randint(0, 8))})
            elif r < 0.52:
                hist.append({"role": "user", "content": [{"type": "text", "text": text(3)}, {"type": "image"}]})
            elif r < 0.56:
                hist.append({"role": "tool", "content": None, "parts": [{"content": text(2)}]})
            elif r < 0.60:
                hist.append({"content": text(2)})  # no role
            elif r < 0.62:
                hist.append("a bare string")
            elif r < 0.65:
                hist.append({"role": "developer", "content": text(3)})
            elif r < 0.68:
                hist.append({"role": "user", "content": 7})
            elif r < 0.78 and hist and isinstance(hist[0], dict) and isinstance(hist[0].get("content"), str):
                # an early message grows by a line: the prefix runs past the end of its line
                hist[0] = {**hist[0], "content": hist[0]["content"] + rnd.choice(["\nuser: more", "\n", " x"])}
            elif r < 0.84 and hist:
                hist.pop(rnd.randrange(len(hist)))
            else:
                hist.append({"role": "assistant", "content": text(rnd.randint(1, 5)) + rnd.choice(["", "\n"])})
            mode = s % 6
            sys_msgs = [[{"role": "system", "content": f"Time : {k} . You are a bot ."}],
                        [{"role": "system", "content": "You are a bot ."}],
                        [{"role": "system", "content": "A"}, {"role": "system", "content": "B é"}],
                        [{"role": "system", "content": [{"type": "text", "text": "blocks"}]}], [], []][mode]
            req = {"messages": sys_msgs + hist}
            if mode == 4 and k % 2:
                req = {"messages": text(4)}
            if mode == 5:
                req = {"instructions": f"Be brief {k % 2}", "input": hist}
            lines.append({"session_id": f"s{s}", "timestamp": 1735689600 + 60 * k, "request": req,
                          "response": {"usage": {"prompt_tokens": 100 + k, "completion_tokens": 3}}})
    rnd.shuffle(lines)
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")


def _prompts(con) -> dict[int, str]:
    rows = con.execute("""
        SELECT rid, string_agg(role || ': ' || text, chr(10) ORDER BY i) FROM (
          SELECT rid, unnest(roles) AS role, unnest(texts) AS text, generate_subscripts(roles, 1) AS i FROM _content)
        GROUP BY rid""").fetchall()
    return dict(rows)


def _lcp(a: str, b: str) -> int:
    """The definition, in the standard library: the length of the longest common prefix."""
    return len(os.path.commonprefix([a, b]))


class _Checked(Exception):
    pass


def test_plain_path_and_per_message_lcp_match_the_definitions(tmp_path, monkeypatch):
    from dataclasses import replace

    from kvreport.runner.audit import pipeline, prompt_bloat
    from kvreport.runner.audit.steps import PerSlice, Py
    from kvreport.runner.audit.sqlfiles import run_sql, statements

    log = tmp_path / "chat.jsonl"
    _log(log)
    seen = {}
    real_tokenize = prompt_bloat.tokenize

    def tokenize(con, p):  # the last step of the bloat extraction (pipeline.CALLS_LABELLED in one process)
        real_tokenize(con, p)
        cols = "rid, roles, texts, system_text, last_user_text, prompt_chars, session_id, line"
        fast = con.execute(f"SELECT {cols} FROM _content ORDER BY rid").fetchall()
        # every call again through the per-message statement (bloat/content_rest.sql)
        con.execute("UPDATE _content SET roles = NULL")
        slow_insert, drop = statements("bloat/content_rest")
        for stmt in (slow_insert, drop):
            con.execute(stmt[0], {"lo": 0, "hi": 1 << 40})
        seen["fast"], seen["slow"] = fast, con.execute(f"SELECT {cols} FROM _content ORDER BY rid").fetchall()
        seen["plain"] = con.execute(
            """SELECT count(*) FROM _staged WHERE starts_with(content, '{"system":null,"messages":[')""").fetchone()[0]
        run_sql(con, "bloat/macros")
        run_sql(con, "bloat/pairs")
        seen["rest"] = con.execute(
            "SELECT count(*) FROM _pairs WHERE prev_rid IS NOT NULL AND lcp_chars IS NULL").fetchone()[0]
        pipeline.run(con, (PerSlice("bloat/lcp_rest", pipeline.every_slice),),
                     pipeline.FigureParams(last_rid=con.execute("SELECT max(rid) FROM _content").fetchone()[0]))
        seen["pairs"] = con.execute("SELECT rid, prev_rid, lcp_chars, prompt_chars, prev_chars FROM _pairs").fetchall()
        seen["texts"] = _prompts(con)
        raise _Checked

    monkeypatch.setattr(pipeline, "CALLS_LABELLED", tuple(
        replace(s, fn=tokenize) if isinstance(s, Py) and s.fn is real_tokenize else s for s in pipeline.CALLS_LABELLED))
    with pytest.raises(_Checked):
        quiet_audit([log], db=tmp_path / "a.duckdb")
    assert seen["fast"] == seen["slow"] and len(seen["fast"]) > 200 and seen["plain"] > 100
    texts = seen["texts"]
    assert seen["rest"] > 0  # the log does exercise the search past a line's end
    pairs = [p for p in seen["pairs"] if p[1] is not None]
    assert len(pairs) > 150
    for rid, prev, lcp, chars, prev_chars in pairs:
        assert chars == len(texts[rid]) and prev_chars == len(texts[prev])
        assert lcp == _lcp(texts[prev], texts[rid]), (texts[prev], texts[rid])


def _con(threads: int):
    import duckdb

    from kvreport.runner.audit.sqlfiles import run_sql

    con = duckdb.connect()
    con.execute(f"SET threads = {threads}")
    run_sql(con, "setup/macros")
    run_sql(con, "bloat/macros")
    return con


@pytest.mark.parametrize("threads", [1, 4])
def test_prompt_text_keeps_message_order(threads):
    """kv_prompt_text collects the lines unordered and orders them by position afterwards: the order holds for
    prompts of thousands of messages, whose rows span many chunks and threads."""
    rnd = random.Random(threads)
    calls = {rid: [(rnd.choice(["system", "user", "a: b"]), rnd.choice(WORDS) * rnd.randint(0, 3))
                   for _ in range(rnd.choice([1, 2, 7, 300, 3000]))] for rid in range(400)}
    con = _con(threads)
    con.execute("CREATE TEMP TABLE m (rid BIGINT, roles VARCHAR[], texts VARCHAR[])")
    con.executemany("INSERT INTO m VALUES (?, ?, ?)",
                    [(rid, [r for r, _ in ms], [t for _, t in ms]) for rid, ms in calls.items()])
    got = dict(con.execute("""
        SELECT rid, kv_prompt_text(role, text, i) FROM (
          SELECT rid, unnest(roles) AS role, unnest(texts) AS text, generate_subscripts(roles, 1) AS i FROM m)
        GROUP BY rid""").fetchall())
    assert got == {rid: "\n".join(f"{r}: {t}" for r, t in ms) for rid, ms in calls.items()}


def test_token_prefix_search_matches_the_definition():
    """bloat/lcp_tokens.sql (the last common id first, then the binary search over the new part only) against the
    common prefix counted id by id."""
    rnd = random.Random(5)
    ids, pairs = [], []
    for rid in range(600):
        prev = ids[-1][1] if ids and rid % 6 else []
        cur = list(prev[:rnd.randint(0, len(prev))]) if rnd.random() < 0.5 else list(prev)
        if cur and rnd.random() < 0.4:
            cur[rnd.randrange(len(cur))] = 99
        cur += [rnd.randint(0, 4) for _ in range(rnd.choice([0, 1, 5, 40]))]
        ids.append((rid, cur))
        if rid % 6:
            pairs.append((rid, rid - 1))
    con = _con(2)
    con.execute("CREATE TEMP TABLE _ids (rid BIGINT, ids INTEGER[], n_tokens BIGINT)")
    con.executemany("INSERT INTO _ids VALUES (?, ?, ?)", [(r, x, len(x)) for r, x in ids])
    con.execute("CREATE TEMP TABLE _pairs (rid BIGINT, prev_rid BIGINT)")
    con.executemany("INSERT INTO _pairs VALUES (?, ?)", pairs)
    from kvreport.runner.audit.sqlfiles import run_sql
    run_sql(con, "bloat/lcp_tokens")
    got = dict(con.execute("SELECT rid, lcp_tokens FROM _lcp_tokens").fetchall())
    by_rid = dict(ids)
    assert got == {r: _lcp(by_rid[p], by_rid[r]) for r, p in pairs}
    assert len({v for v in got.values()}) > 10


# Logged messages as raw JSON text, the odd ones included: bloat/content.sql reads a call through the plain path only
# when that gives exactly what the per-message statement gives.
_ODD_MESSAGES = [
    '{"role":"user","content":"hi"}', '{"role":"assistant","content":"ok\\n"}', '{"role":"system","content":"sys A"}',
    '{"role":"developer","content":"dev"}', '{"role":"tool","content":"t"}',
    # roles that are not strings, missing, null, spelled otherwise, given twice
    '{"role":1,"content":"a"}', '{"role":1.0,"content":"b"}', '{"role":1e2,"content":"c"}', '{"role":-0,"content":"d"}',
    '{"role":12345678901234567890123,"content":"e"}', '{"role":true,"content":"f"}', '{"role":false,"content":"g"}',
    '{"role":{"a":[1,"\\u00e9"],"a":2},"content":"h"}', '{"role":["user"],"content":"i"}', '{"role":null,"content":"j"}',
    '{"content":"no role"}', '{"Role":"user","content":"k"}', '{"role":"user","Content":"l"}',
    '{"role":null,"role":"user","content":"m"}', '{"role":"user","role":"system","content":"n"}',
    '{"role":"us\\u0065r","content":"o"}', '{"r\\u006fle":"user","content":"p"}', '{"role":"","content":"q"}',
    '{"role":"system\\u0000","content":"r"}',
    # contents that are not strings, missing, null, given twice; strings that read like other JSON
    '{"role":"user","content":1.0}', '{"role":"user","content":1e2}', '{"role":"user","content":-0.5E-3}',
    '{"role":"user","content":true}', '{"role":"user","content":null}', '{"role":"user"}',
    '{"role":"user","content":{"text":"obj text"}}', '{"role":"user","content":{"type":"x"}}',
    '{"role":"user","content":[{"type":"text","text":"blk"},{"type":"image"}]}', '{"role":"user","content":[]}',
    '{"role":"user","content":["a",1]}', '{"role":"user","content":"a","content":5}',
    '{"role":"user","content":5,"content":"a"}', '{"role":"user","content":"a","content":"b"}',
    '{"role":"user","content":"\\u00e9\\u0000\\ud83d\\ude00 \\"q\\" \\\\ \\t \\/"}', '{"role":"user","content":"123"}',
    '{"role":"user","content":"true"}', '{"role":"user","content":"null"}', '{"role":"user","content":"{\\"a\\":1}"}',
    '{"role":"user","content":""}', '{ "role" : "user" ,\n "content" : "spaced" }',
    '{"role":"tool","content":null,"parts":[{"content":"p"}]}', '{"role":"user","parts":[{"content":"p2"}]}',
    '{"role":"user","content":"x","extra":{"role":"y","content":5}}',
    '{"role":"user","content":"' + "x" * 300_000 + '"}', '{"role":"user","content":"' + "\\u00e9\\ud83d\\ude00" * 50_000 + '"}',
    # messages that are not objects
    '"bare string"', '1', 'null', 'true', '[]', '[{"role":"user","content":"nested"}]', '{}',
]
_ODD_SYSTEMS = ['null', '"be brief"', '""', '"\\u00e9 sys"', '[{"type":"text","text":"blk sys"}]', '{"text":"o"}', '5', 'true']
_ODD_NOT_LISTS = ['"just text"', '"\\u00e9"', '""', 'null', '{"role":"user","content":"obj"}', '5', 'true', '[]']


def _odd_contents(rnd) -> list[str]:
    docs = []
    for k in range(900):
        system = rnd.choice(_ODD_SYSTEMS) if k % 3 else "null"
        if k % 10 == 9:
            messages = rnd.choice(_ODD_NOT_LISTS)
        else:
            # mostly plain messages with an odd one now and then, as in a real log
            plain = _ODD_MESSAGES[:5] + ['{"role":"user","content":"q' + str(k) + '"}']
            msgs = [rnd.choice(plain) if rnd.random() < 0.85 else rnd.choice(_ODD_MESSAGES)
                    for _ in range(rnd.choice([0, 1, 2, 3, 5, 9]))]
            messages = "[" + ",".join(msgs) + "]"
        docs.append('{"system":' + system + ',"messages":' + messages + "}")
    docs += ['{"messages":[{"role":"user","content":"no system key"}]}', '{"system":"only system"}', "{}",
             '{"system":null,"messages":[{"role":"user","content":"a"}],"messages":"dup"}',
             '{"system":"s1","system":null,"messages":[{"role":"user","content":"a"}]}',
             '{"System":"x","Messages":[{"role":"user","content":"case"}]}',
             '{ "system" : null , "messages" : [ {"role":"user","content":"spaced"} ] }',
             '{"system":null,"messages":[{"role":"system","content":"A"},{"role":"system","content":"B"}]}',
             '{"system":"top","messages":[{"role":"system","content":"A"},{"role":"user","content":"u"}]}',
             '{"system":null,"messages":[{"role":"developer","content":"D"},{"role":"system","content":"S"}]}']
    return docs


@pytest.mark.parametrize("threads", [1, 3])
def test_plain_path_matches_the_per_message_path_on_odd_json(threads):
    """bloat/content.sql against bloat/content_rest.sql for every call, on hand-made JSON: non-string roles and
    contents, null and missing fields, keys in other case or given twice, escapes, huge strings, messages that
    are not a list. The plain path must take a good share of the calls and give exactly what the per-message
    statement gives for them."""
    from kvreport.runner.audit import pipeline
    from kvreport.runner.audit.sqlfiles import run_sql, statements

    docs = _odd_contents(random.Random(threads))
    con = _con(threads)
    run_sql(con, "setup/staged")
    con.executemany("""INSERT INTO _staged (source, line, session_id, start_time, input_tokens, cached_input_tokens, content)
                       VALUES ('odd', ?, 's' || (? % 7), make_timestamp(2025, 1, 1, 0, 0, ? % 60), 10, 0, ?)""",
                    [(i, i, i, d) for i, d in enumerate(docs)])
    run_sql(con, "bloat/content")
    plain = con.execute("SELECT count(*) FROM _content WHERE len(roles) > 0").fetchone()[0]
    con.execute("DROP TABLE _content")
    pipeline.run(con, pipeline.BLOAT_EXTRACT, pipeline.FigureParams())
    cols = "rid, roles, texts, system_text, last_user_text, prompt_chars, session_id, line, t, input_tokens"
    fast = con.execute(f"SELECT {cols} FROM _content ORDER BY rid").fetchall()
    con.execute("UPDATE _content SET roles = NULL")
    for stmt, _ in statements("bloat/content_rest"):
        con.execute(stmt, {"lo": 0, "hi": 1 << 40})
    slow = con.execute(f"SELECT {cols} FROM _content ORDER BY rid").fetchall()
    assert len(fast) == len(slow) > 700 and 300 < plain < len(fast)
    for a, b in zip(fast, slow):
        assert a == b, (docs[a[7]][:300], a[1:6], b[1:6])
