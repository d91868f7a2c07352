"""`kvreport replay`: the prefix cache on a hand-made trace worked out by hand, on a slice of the Mooncake
conversation trace (and on the whole trace, slow) against an independent computation, bad lines as rejects."""
import heapq
import json
import math
from pathlib import Path

import pytest

from conftest import run_cli
from kvreport.runner.replay.cache import PrefixCache, to_units
from kvreport.runner.replay.sweep import KVPool, Setup, replay

ROOT = Path(__file__).resolve().parent.parent
SLICE = ROOT / "tests" / "fixtures" / "traces" / "mooncake_conversation_slice.jsonl"
FULL = ROOT.parent.parent / "shared" / "traces" / "mooncake" / "conversation_trace.jsonl"
FULL = FULL if FULL.exists() else Path("/work/shared/traces/mooncake/conversation_trace.jsonl")


def _write(path: Path, records) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records))
    return path


def _req(t, n_tokens, hashes, out=0):
    return {"timestamp": t, "input_length": n_tokens, "output_length": out, "hash_ids": hashes}


# ------------------------------------------------------------------------------------- worked out by hand

# 16-token trace blocks on 16-token engine blocks (one unit = one block), no output, so every request's
# blocks are released when the next one arrives. Pool: 4 blocks per GPU.
HAND = [
    _req(0, 32, [1, 2]),        # miss, miss. Released tail first: unreferenced LRU order [2, 1]
    _req(1000, 48, [1, 2, 3]),  # hits 1, 2 = 32 tokens; 3 new (3 blocks used). Released: LRU [3, 2, 1]
    _req(2000, 32, [4, 5]),     # misses; 5 blocks > 4: evicts 3 (LRU first). Released: LRU [2, 1, 5, 4]
    _req(3000, 40, [1, 2, 3]),  # hits 1, 2 = 32 tokens (3 was evicted); 3 new: 5 blocks: evicts 5
]
# Token-weighted at 4 blocks: (0 + 32 + 0 + 32) / (32 + 48 + 32 + 40) = 64 / 152, 2 blocks evicted.
# Unlimited: the last request hits all of [1, 2, 3], its whole 40 tokens: (32 + 40) / 152 = 72 / 152.
# Target 0.9 x 72 / 152 = 64.8 / 152: 1 GPU (64) falls short, 2 GPUs (8 blocks: no eviction, 72) reach it.


def _hand_setup(tmp_path, **kw) -> Setup:
    trace = _write(tmp_path / "hand.jsonl", HAND)
    pool = KVPool(blocks_per_group=4, block_bytes_per_rank=1000, block_bytes_host=1000, basis="by hand")
    return Setup([trace], pool, tp=1, engine_block=16, trace_block=16, **kw)


def test_hand_made_trace_hits_evictions_and_gpu_count(tmp_path):
    r = replay(_hand_setup(tmp_path, capacity_tokens=[64]))
    assert r["input_tokens"] == 152
    assert r["ceiling_hit_rate"] == pytest.approx(72 / 152)
    at_4 = next(p for p in r["curve"] if p["capacity_tokens"] == 64 and p["gpus"] is None)
    assert at_4["hit_rate"] == pytest.approx(64 / 152)
    assert at_4["prefill_tokens_saved"] == 64
    assert at_4["evictions"] == 2 and at_4["unadmitted"] == 0
    assert at_4["peak_blocks"] == 4
    assert r["gpus_for_target"] == 2
    assert r["at_target"]["hit_rate"] == pytest.approx(72 / 152)


def test_running_requests_hold_their_blocks_and_an_unfitting_one_is_not_admitted():
    pool = PrefixCache(4)
    # Holds 2 prompt blocks and 1 output block (16 tokens at 1 token/s) until t = 16 s.
    pool.request(0, (1, 2), 16, 1, 32, 1, 16_000)
    # 2 more blocks: 3 held + 2 = 5 > 4 and nothing unreferenced to evict: not admitted.
    assert pool.request(1000, (3, 4), 16, 1, 32, 0, 1000) == 0
    assert pool.unadmitted == 1 and pool.evictions == 0
    # After t = 16 s the first request has ended: its blocks are cached, so a repeat hits both.
    assert pool.request(17_000, (1, 2), 16, 1, 32, 0, 17_000) == 32


def test_ttl_drops_blocks_released_longer_ago_than_the_ttl():
    pool = PrefixCache(None, ttl_ms=300_000)
    pool.request(0, (1,), 16, 1, 16, 0, 0)
    assert pool.request(301_000, (1,), 16, 1, 16, 0, 301_000) == 0  # released at 0, expired at 300 s
    assert pool.request(400_000, (1,), 16, 1, 16, 0, 400_000) == 16  # released at 301 s: still alive


def test_host_tier_keeps_what_the_gpu_pool_evicts(tmp_path):
    # 1 GPU with 4 blocks and 1000 B of host per GPU = 1 host block: 5 blocks in all, so the hand trace's
    # third request evicts nothing (5 fit: 3 goes to the host); the fourth finds 1, 2 and 3 cached, hits all
    # 40 tokens, and still holds 5 blocks: no eviction at all.
    r = replay(_hand_setup(tmp_path, host_bytes_per_gpu=1000))
    one = next(p for p in r["curve_with_host"] if p["gpus"] == 1)
    assert one["hit_rate"] == pytest.approx(72 / 152) and one["evictions"] == 0
    assert r["gpus_for_target_with_host"] == 1 and r["gpus_for_target"] == 2


def test_trace_blocks_map_onto_engine_blocks():
    assert to_units((7, 8, 9), 512, 16) == ((7, 8, 9), 512, 32)
    # 16-token trace blocks on 32-token engine blocks: pairs named by their last hash, the odd tail alone.
    assert to_units((1, 2, 3, 4, 5), 16, 32) == ((2, 4, 5), 32, 1)


# ------------------------------------------------------------------------- against an independent replay

def _reference(path: Path, capacity_blocks: int | None, engine_block=16, trace_block=512, rate=30.0):
    """The same rules as runner/replay/cache.py written another way: a heap of (release order, block) with
    stale entries skipped instead of an ordered dict, and every block handled one at a time."""
    refs, release_key, free_heap, running = {}, {}, [], []
    order = seq = 0
    hit_tokens = input_tokens = evicted = 0
    out_held = 0
    k = trace_block // engine_block
    for line in path.read_text().splitlines():
        r = json.loads(line)
        t, ids = r["timestamp"], r["hash_ids"]
        while running and running[0][0] <= t:
            _, _, done, out = heapq.heappop(running)
            out_held -= out
            for b in reversed(done):
                refs[b] -= 1
                if refs[b] == 0:
                    del refs[b]
                    order += 1
                    release_key[b] = order
                    heapq.heappush(free_heap, (order, b))
        input_tokens += r["input_length"]
        present = lambda b: b in refs or b in release_key  # noqa: E731
        n_hit = 0
        while n_hit < len(ids) and present(ids[n_hit]):
            n_hit += 1
        out = math.ceil(r["output_length"] / engine_block)
        if capacity_blocks is not None:
            need = (len(refs) + sum(1 for b in ids if b not in refs)) * k + out_held + out
            if need > capacity_blocks:
                continue
        hit_tokens += r["input_length"] if n_hit == len(ids) else n_hit * trace_block
        for b in ids:
            if b in release_key:
                del release_key[b]
            refs[b] = refs.get(b, 0) + 1
        out_held += out
        seq += 1
        heapq.heappush(running, (t + 1000.0 * r["output_length"] / rate, seq, ids, out))
        if capacity_blocks is not None:
            while (len(refs) + len(release_key)) * k + out_held > capacity_blocks and release_key:
                key, b = heapq.heappop(free_heap)
                if release_key.get(b) == key:
                    del release_key[b]
                    evicted += k
    return hit_tokens / input_tokens, evicted


def _ceiling(path: Path) -> float:
    seen, hit, total = set(), 0, 0
    for line in path.read_text().splitlines():
        r = json.loads(line)
        ids = r["hash_ids"]
        n = next((i for i, b in enumerate(ids) if b not in seen), len(ids))
        hit += r["input_length"] if n == len(ids) else 512 * n
        total += r["input_length"]
        seen.update(ids)
    return hit / total


def _agree(path: Path, capacities: list[int]):
    pool = KVPool(blocks_per_group=10**6, block_bytes_per_rank=1, block_bytes_host=1, basis="test")
    r = replay(Setup([path], pool, tp=1, capacity_tokens=capacities))
    assert r["ceiling_hit_rate"] == pytest.approx(_ceiling(path), abs=1e-12)
    for c in capacities:
        point = next(p for p in r["curve"] if p["capacity_tokens"] == c and p["gpus"] is None)
        rate, evicted = _reference(path, c // 16)
        assert point["hit_rate"] == pytest.approx(rate, abs=1e-12), c
        assert point["evictions"] == evicted, c
    return r


def test_slice_agrees_with_an_independent_replay():
    # Capacities from tight (requests barely fit) to past every distinct block of the slice (~6M tokens).
    r = _agree(SLICE, [262144, 524288, 1048576, 2097152, 8388608])
    assert 0.15 < r["ceiling_hit_rate"] < 0.18  # the slice's first 165 s reuse little yet
    assert [p["hit_rate"] for p in r["curve"] if p["gpus"] is None] == \
        sorted(p["hit_rate"] for p in r["curve"] if p["gpus"] is None)


@pytest.mark.slow
@pytest.mark.skipif(not FULL.exists(), reason="the shared Mooncake trace is not on this machine")
def test_full_mooncake_trace_agrees_with_an_independent_replay():
    r = _agree(FULL, [1536000, 5120000, 10240000, 20480000, 40960000])
    assert r["requests"] == 12031 and r["rejects"] == 0


# ------------------------------------------------------------------------------------------- bad input

def test_bad_lines_are_rejects_naming_file_line_and_field_and_good_lines_replay(tmp_path, capsys):
    trace = _write(tmp_path / "mixed.jsonl", [
        _req(100, 1000, [1, 2]),                                      # 1 good
        {"timestamp": 110, "input_length": 600, "output_length": 5},  # 2 no hashes
        _req(120, 1000, [3, 2]),                                      # 3 2 followed 1 on line 1: not a chain
        _req(5, 600, [1, 4]),                                         # 4 timestamp backwards (100 -> 5)
        _req(130, 1000, [1, 2, 5]),                                   # 5 3 hashes for 2 blocks of 512
        "{not json",                                                  # 6
        _req(140, 1100, [1, 2, 6]),                                   # 7 good: hits 1, 2
    ])
    assert run_cli("replay", trace, "--model", "llama-3.1-8b", "--json", "--progress") == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "pass 1: 7 lines" in captured.err and "lines/s" in captured.err  # the progress line, on stderr
    r = json.loads(out)
    assert r["requests"] == 2 and r["rejects"] == 5
    got = {(x["line"], x["field"]) for x in r["reject_lines"]}
    assert got == {(2, "hash_ids"), (3, "hash_ids"), (4, "timestamp"), (5, "hash_ids"), (6, "line")}
    assert all(x["file"] == str(trace) for x in r["reject_lines"])
    reasons = {x["line"]: x["reason"] for x in r["reject_lines"]}
    assert "missing" in reasons[2] and "prefix chain" in reasons[3] and "backwards" in reasons[4]
    assert "does not divide" in reasons[5]
    assert r["ceiling_hit_rate"] == pytest.approx(1024 / 2100)


def test_a_trace_with_no_good_line_is_one_error_line_exit_2(tmp_path, capsys):
    trace = _write(tmp_path / "bad.jsonl", [{"timestamp": 0, "input_length": 5, "output_length": 1}])
    assert run_cli("replay", trace, "--model", "llama-3.1-8b") == 2
    err = capsys.readouterr().err
    assert f"{trace}:1: hash_ids: missing" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_json_has_the_ceiling_and_a_token_weighted_curve_and_stores(tmp_path, capsys):
    db = tmp_path / "r.duckdb"
    assert run_cli("replay", SLICE, "--model", "llama-3.1-8b", "--gpu", "H100", "--capacity-tokens",
                   "262144,1048576", "--json", "--db", db) == 0
    r = json.loads(capsys.readouterr().out)
    assert 0 < r["ceiling_hit_rate"] < 1
    assert {"capacity_tokens", "hit_rate"} <= set(r["curve"][0])
    assert r["gpus_for_target"] >= 1
    import duckdb
    con = duckdb.connect(str(db), read_only=True)
    assert con.execute("SELECT ceiling_hit_rate, gpus_for_target FROM replays").fetchall() == \
        [(pytest.approx(r["ceiling_hit_rate"]), r["gpus_for_target"])]
    assert con.execute("SELECT count(*) FROM replay_curve WHERE policy = 'lru'").fetchone()[0] == len(r["curve"])


@pytest.mark.slow
def test_merge_carries_replays_once_and_renumbers_a_taken_id(tmp_path, capsys):
    import duckdb
    import shutil
    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    for db in (a, b):
        shutil.copyfile(ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb", db)
        assert run_cli("replay", SLICE, "--model", "llama-3.1-8b", "--capacity-tokens", "262144", "--db", db) == 0
    out = tmp_path / "m.duckdb"
    assert run_cli("merge", a, a, b, "--into", out) == 0  # a twice: its replay once; b's replay-1 is another
    con = duckdb.connect(str(out), read_only=True)
    assert sorted(r for (r,) in con.execute("SELECT replay_id FROM replays").fetchall()) == ["replay-1", "replay-2"]
    per = dict(con.execute("SELECT replay_id, count(*) FROM replay_curve GROUP BY ALL").fetchall())
    assert per["replay-1"] == per["replay-2"] > 0


def test_the_call_weighted_ceiling_is_context_beside_the_token_weighted_one(tmp_path):
    # Hand trace, unlimited: per-request hit shares 0, 32/48, 0, 40/40; their mean is (2/3 + 1) / 4.
    r = replay(_hand_setup(tmp_path))
    assert r["ceiling_call_weighted"] == pytest.approx((2 / 3 + 1) / 4)
    assert r["ceiling_hit_rate"] == pytest.approx(72 / 152)


def test_a_host_tier_does_not_admit_what_the_gpu_cannot_hold(tmp_path):
    # 2 GPU blocks and a vast host tier: the hand trace's 3-block requests (2nd and 4th) cannot run on the
    # GPU however much the host keeps, so the pool must be replayed, not taken as never evicting.
    setup = _hand_setup(tmp_path, host_bytes_per_gpu=10**6)
    setup.pool = KVPool(blocks_per_group=2, block_bytes_per_rank=1000, block_bytes_host=1000, basis="by hand")
    r = replay(setup)
    one = next(p for p in r["curve_with_host"] if p["gpus"] == 1)
    assert one["unadmitted"] == 2 and one["prefill_tokens_saved"] == 0


@pytest.mark.slow
def test_the_ledger_judges_the_article_on_replayed_traffic_labelled_as_such(tmp_path):
    import shutil
    from kvreport.analysis import claims
    from kvreport.analysis.queries import Queries
    from kvreport.runner.core.store import Store
    db = tmp_path / "k.duckdb"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb", db)
    assert run_cli("replay", SLICE, "--model", "llama-3.1-70b", "--tp", "8", "--db", db) == 0
    with Store(db, read_only=True) as store:
        q = Queries(store.con)
        rows = [r for r in claims.ledger(q, [r["run_id"] for r in q("runs")])
                if (r["measured_value"] or "").startswith("replayed real traffic (simulation)")]
    by_claim = {r["claim_id"]: r for r in rows}
    assert set(by_claim) == {"token-api-bill", "token-double-capacity"}
    # The slice's ceiling is 16.4% of prompt tokens: no prefix cache can cut its bill by 55%.
    assert by_claim["token-api-bill"]["verdict"] == "refuted" and "16.4%" in by_claim["token-api-bill"]["measured_value"]
    assert all(r["run_id"] is None for r in rows)


@pytest.mark.slow
def test_the_capacity_page_answers_first(tmp_path):
    import shutil
    db = tmp_path / "k.duckdb"
    shutil.copyfile(ROOT / "tests" / "fixtures" / "site" / "kvreport.duckdb", db)
    assert run_cli("replay", SLICE, "--model", "llama-3.1-70b", "--tp", "8", "--db", db) == 0
    assert run_cli("build", "--db", db, "--out", tmp_path / "site") == 0
    page = (tmp_path / "site" / "capacity.html").read_text()
    main_part = " ".join(page[page.index("<main"):].split())
    assert main_part.index("This traffic needs") < main_part.index("<h2")
    assert "16 H200s" in main_part and "simulated from a trace" in main_part
    assert 'href="capacity.html"' in (tmp_path / "site" / "index.html").read_text()
