"""The built-in demo workload `kvreport run` audits, so the audit page always has something to show.

Two parts, both deterministic (fixed seed):
- the article's three hand-made sessions, verbatim (a sessions CSV without times);
- a generated multi-turn chat workload in the providers' own log formats (OpenAI Chat Completions and
  Anthropic Messages envelopes, with the request messages logged), spread over two hours. Sessions
  follow a few behaviours real traffic shows: a stable system prompt; a system prompt that starts with
  the current time (so every call's prefix differs after a few tokens and no prefix cache can help);
  users who stop answering and leave their session idle; explicit disconnects; users who paste the
  same instruction every turn; long pauses that outlive the provider's prompt cache.

Usage figures come from a simulated provider, stated here so nobody mistakes them for measurements:
tokens are counted with a word-level tokenizer built from the workload's own vocabulary (saved next to
the logs as tokenizer.json and passed to the audit as --tokenizer), each message costs its text plus
one role token, and the provider caches the longest prefix shared with the session's previous call in
64-token blocks, only for prompts of at least 256 tokens and only if the previous call was less than
five minutes ago.
"""
from __future__ import annotations

import csv
import datetime as dt
import json
import random
from pathlib import Path

from tokenizers import Tokenizer, pre_tokenizers
from tokenizers.models import WordLevel

SEED = 20250602
START = dt.datetime(2025, 6, 2, 9, 0, 0)
WINDOW_S = 2 * 3600
N_SESSIONS = 40
CACHE_BLOCK, CACHE_MIN, CACHE_TTL_S = 64, 256, 300

# The article's sessions, as published (its figures are what the claims ledger checks).
SEED_SESSIONS = [
    ("sess-001", 2000, 150, 300, 2000),
    ("sess-002", 4000, 50, 100, 0),
    ("sess-003", 1500, 12000, 500, 8000),
]

_WORDS = (
    "account order refund invoice shipping delivery address password login error update version install "
    "configure network server request response timeout retry cache memory token model answer question "
    "customer support ticket policy warranty return exchange payment card bank transfer balance plan "
    "upgrade downgrade feature release bug crash log report metric latency throughput region zone cluster "
    "node pod container image build deploy rollback branch commit review test coverage lint format "
    "travel flight hotel booking itinerary passport visa baggage seat upgrade lounge transfer airport "
    "please could you help me with the a an of to in for on at by from this that these those my our your "
    "is are was were be been will would should can may might must not no yes also then because while "
    "first second next last new old same other every each all some many few more less quickly carefully"
).split()

_APPS = {
    "support": ("You are the customer support assistant for an online store. Answer politely and briefly. "
                "Never promise refunds that the policy does not allow. Ask for the order number before "
                "discussing an order. Escalate to a human agent when the customer asks for one. "),
    "coding": ("You are a senior software engineer helping with code reviews and debugging. Prefer small, "
               "safe changes. Explain the cause of a bug before proposing a fix. Show commands in code "
               "blocks. Mention tests that should be added. "),
    "travel": ("You are a travel booking assistant. Confirm dates, airports and passenger names before "
               "booking. Quote prices with currency. Mention baggage rules and visa requirements when a "
               "trip crosses a border. "),
}
_REPEATED = "Remember to answer in valid JSON with the keys answer and sources."


def _sentence(rng: random.Random, n: int) -> str:
    words = [rng.choice(_WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _text(rng: random.Random, n_words: int) -> str:
    out, left = [], n_words
    while left > 0:
        k = min(left, rng.randint(6, 14))
        out.append(_sentence(rng, k))
        left -= k
    return " ".join(out)


def _system_prompt(app: str) -> str:
    # A long policy section after the app's opening instructions, the same for every session of the app.
    policy = random.Random(SEED + sorted(_APPS).index(app))
    return _APPS[app] + _text(policy, 260)


def _behaviour(i: int) -> str:
    return ["stable", "timestamp", "idle", "disconnect", "repeater", "slow"][i % 6]


def _plan(rng: random.Random) -> list[dict]:
    sessions = []
    for i in range(N_SESSIONS):
        kind = _behaviour(i)
        app = ["support", "coding", "travel"][i % 3]
        turns = rng.randint(2, 4) if kind in ("idle", "disconnect") else rng.randint(3, 9)
        start = rng.uniform(0, WINDOW_S * 0.75)
        gaps = [rng.uniform(400, 900) if kind == "slow" else rng.uniform(15, 120) for _ in range(turns - 1)]
        sessions.append(dict(id=f"{app}-{i:03d}", kind=kind, app=app, turns=turns, start=start, gaps=gaps,
                             provider="anthropic" if i % 3 == 2 else "openai"))
    return sessions


def _conversations(rng: random.Random) -> list[dict]:
    """Every call of every generated session, with its messages and times (no token counts yet)."""
    calls = []
    for s in _plan(rng):
        system = _system_prompt(s["app"])
        history: list[dict] = []
        t = s["start"]
        for turn in range(s["turns"]):
            if turn:
                t += s["gaps"][turn - 1]
            now = START + dt.timedelta(seconds=t)
            sys_text = (f"Current time: {now.isoformat()}Z. " + system) if s["kind"] == "timestamp" else system
            user = _text(rng, rng.randint(15, 40))
            if s["kind"] == "repeater":
                user = user + " " + _REPEATED
            history.append({"role": "user", "content": user})
            reply = _text(rng, rng.randint(40, 120))
            calls.append(dict(session=s, t=t, system=sys_text, messages=[dict(m) for m in history], reply=reply,
                              last=turn == s["turns"] - 1))
            history.append({"role": "assistant", "content": reply})
    return calls


def _build_tokenizer(texts: list[str]):
    """A word-level tokenizer over the workload's own words (nothing downloaded)."""
    pre = pre_tokenizers.Whitespace()
    vocab = {"[UNK]": 0, "<system>": 1, "<user>": 2, "<assistant>": 3}
    for text in texts:
        for piece, _ in pre.pre_tokenize_str(text):
            vocab.setdefault(piece, len(vocab))
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre
    return tok


def _lcp(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def write_demo(folder: Path, seed: int = SEED) -> tuple[list[Path], Path]:
    """Write the demo logs and their tokenizer into `folder`; returns (log files, tokenizer.json)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    calls = _conversations(rng)
    tok = _build_tokenizer([c["system"] for c in calls] + [m["content"] for c in calls for m in c["messages"]])
    tok_path = folder / "tokenizer.json"
    tok.save(str(tok_path))

    def ids(text: str) -> list[int]:
        return tok.encode(text, add_special_tokens=False).ids

    role_id = {"system": 1, "user": 2, "assistant": 3}
    prev: dict[str, tuple[float, list[int]]] = {}
    out: dict[str, list] = {"openai": [], "anthropic": []}
    for c in sorted(calls, key=lambda c: (c["session"]["id"], c["t"])):
        s = c["session"]
        prompt = [role_id["system"], *ids(c["system"])]
        for m in c["messages"]:
            prompt += [role_id[m["role"]], *ids(m["content"])]
        cached = 0
        if s["id"] in prev and len(prompt) >= CACHE_MIN and c["t"] - prev[s["id"]][0] < CACHE_TTL_S:
            cached = _lcp(prev[s["id"]][1], prompt) // CACHE_BLOCK * CACHE_BLOCK
        prev[s["id"]] = (c["t"], prompt)
        n_in, n_out = len(prompt), len(ids(c["reply"]))
        ts = (START + dt.timedelta(seconds=c["t"])).isoformat() + "Z"
        rec = {"session_id": s["id"], "timestamp": ts}
        if c["last"] and s["kind"] == "disconnect":
            rec["disconnected_at"] = (START + dt.timedelta(seconds=c["t"] + 20)).isoformat() + "Z"
        if s["provider"] == "openai":
            rec["request"] = {"model": "gpt-4o-mini", "messages": [{"role": "system", "content": c["system"]},
                                                                   *c["messages"]]}
            rec["response"] = {
                "id": f"chatcmpl-{len(out['openai']):06d}", "object": "chat.completion", "model": "gpt-4o-mini",
                "created": int((START + dt.timedelta(seconds=c["t"])).replace(tzinfo=dt.timezone.utc).timestamp()),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": c["reply"]},
                             "finish_reason": "stop"}],
                "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out,
                          "prompt_tokens_details": {"cached_tokens": cached}}}
        else:
            write = n_in - cached if n_in >= CACHE_MIN else 0
            rec["request"] = {"model": "claude-sonnet-4", "system": c["system"], "messages": c["messages"]}
            rec["response"] = {
                "id": f"msg_{len(out['anthropic']):06d}", "type": "message", "role": "assistant",
                "model": "claude-sonnet-4", "content": [{"type": "text", "text": c["reply"]}],
                "usage": {"input_tokens": n_in - cached - write, "cache_read_input_tokens": cached,
                          "cache_creation_input_tokens": write, "output_tokens": n_out}}
        out[s["provider"]].append((c["t"], rec))

    paths = []
    seed_csv = folder / "article_sessions.csv"
    with open(seed_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["session_id", "system_tokens", "user_tokens", "assistant_tokens", "cached_input_tokens"])
        w.writerows(SEED_SESSIONS)
    paths.append(seed_csv)
    for provider, recs in out.items():
        path = folder / f"{provider}_chat.jsonl"
        with open(path, "w") as f:
            for _, rec in sorted(recs, key=lambda x: x[0]):
                f.write(json.dumps(rec) + "\n")
        paths.append(path)
    return paths, tok_path
