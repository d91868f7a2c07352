"""Issue 25, what the audit reads: long lines, damaged compression, the same file twice, symlink loops, pipes,
impossible times and option values, CSV quoting errors, and the CLI's one clear line for each."""
from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest

from kvreport.runner.core.errors import UserError
from conftest import FIXTURE_DB, ROOT, cli_in_process, cli_process as _cli, one_clear_line as _one_clear_line, \
    quiet_audit


def _call(i: int, pad: int = 0, ts="2025-01-01T00:00:00Z") -> str:
    return json.dumps({"session_id": f"s{i % 3}", "timestamp": ts,
                       "request": {"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * pad}]},
                       "response": {"id": f"c{i}", "object": "chat.completion", "created": 1735689600,
                                    "model": "gpt-4o", "choices": [],
                                    "usage": {"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}}})


def _log(path: Path, pads: list[int]) -> Path:
    path.write_text("".join(_call(i, p) + "\n" for i, p in enumerate(pads)), encoding="utf-8")
    return path


def _audit(tmp_path, paths, **kw) -> dict:
    return quiet_audit(paths, tmp_path / "a.duckdb", **kw)


def _rejects(tmp_path) -> list[tuple]:
    import duckdb

    con = duckdb.connect(str(tmp_path / "a.duckdb"), read_only=True)
    try:
        return con.execute("SELECT line, reason FROM token_rejects ORDER BY line").fetchall()
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------------
# long lines

@pytest.mark.parametrize("where", ["last", "middle"])
def test_a_line_longer_than_the_readers_default_is_audited_not_dropped(tmp_path, where):
    pads = [0] * 6
    pads.insert(6 if where == "last" else 3, 3 << 20)  # 3 MB: over DuckDB's 2 MB default, within the limit
    s = _audit(tmp_path, [_log(tmp_path / "l.jsonl", pads)])
    assert s["n_calls"] == 7 and s["n_rejects"] == 0


def test_ten_megabyte_lines_are_audited_and_priced_at_the_default_memory_limit(tmp_path):
    """Each line alone fits; all ten once made DuckDB fail with "Out of Memory" at the default limit."""
    s = _audit(tmp_path, [_log(tmp_path / "l.jsonl", [1 << 20] * 10)])
    assert s["n_calls"] == 10 and s["n_rejects"] == 0
    assert s["priced_calls"] == 10 and s["cost_usd"] > 0


def test_a_line_too_long_to_audit_is_one_reject_naming_its_size(tmp_path):
    pads = [0, 0, 5 << 20, 0, 0]  # 5 MB with a 128MB limit: over its 1/48
    s = _audit(tmp_path, [_log(tmp_path / "l.jsonl", pads)], memory_limit="128MB")
    assert s["n_calls"] == 4 and s["n_rejects"] == 1
    (line, reason), = _rejects(tmp_path)
    size = len(_call(2, 5 << 20))
    # The limit is 1/48 of DuckDB's memory_limit as DuckDB reports it (128MB reads back as 122.0 MiB).
    assert line == 3 and f"line of {size:,} bytes is longer than the {int(122 * 2**20 / 48):,} bytes" in reason
    assert "--memory-limit" in reason


@pytest.mark.slow
def test_a_last_line_over_the_readers_buffer_is_not_silently_dropped(tmp_path):
    """DuckDB's reader with its default line size drops a last line of 32 MB or more without a word."""
    s = _audit(tmp_path, [_log(tmp_path / "l.jsonl", [0] * 4 + [33 << 20])], memory_limit="2GB")
    assert s["n_calls"] == 5 and s["n_rejects"] == 0


def test_many_long_lines_that_do_not_fit_together_are_rejects_and_the_rest_survives(tmp_path):
    pads = [0, 6 << 20, 0, 6 << 20, 6 << 20, 0, 6 << 20, 0, 6 << 20, 6 << 20]
    s = _audit(tmp_path, [_log(tmp_path / "l.jsonl", pads)])
    assert s["n_calls"] == 4 and s["n_rejects"] == 6
    assert [r[0] for r in _rejects(tmp_path)] == [2, 4, 5, 7, 9, 10]


def test_a_first_line_without_end_is_read_with_a_bound(tmp_path):
    from kvreport.runner.audit import formats

    big = tmp_path / "nonewline.jsonl"
    with open(big, "wb") as f:  # sparse: 80 MB of NUL bytes, no newline
        f.truncate(80 << 20)
    r = _cli("audit", big, "--db", tmp_path / "a.duckdb")
    err = _one_clear_line(r)
    assert str(big) in err
    assert formats.FIRST_LINE_BYTES < 80 << 20


def test_a_deeply_nested_first_line_names_the_file(tmp_path):
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"a":' * 100_000 + "1" + "}" * 100_000 + "\n")
    err = _one_clear_line(_cli("audit", deep, "--db", tmp_path / "a.duckdb"))
    assert str(deep) in err and "nests JSON too deeply" in err


# ---------------------------------------------------------------------------------------------------
# damaged compression

def _lines(n=2000) -> bytes:
    return "".join(_call(i) + "\n" for i in range(n)).encode()


def test_truncated_zstd_is_an_error_naming_the_file_never_a_partial_audit(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    data = zstandard.ZstdCompressor().compress(_lines())
    path = tmp_path / "t.jsonl.zst"
    path.write_bytes(data[: len(data) * 3 // 4])
    with pytest.raises(UserError, match=r"t\.jsonl\.zst: corrupt or truncated zstd data"):
        _audit(tmp_path, [path])
    assert not (tmp_path / "a.duckdb").exists()


@pytest.mark.parametrize("damage", ["crc", "truncated"])
def test_damaged_gzip_is_an_error_naming_the_file(tmp_path, damage):
    data = bytearray(gzip.compress(_lines()))
    if damage == "crc":
        data[-6] ^= 0xFF
    else:
        data = data[:-40]
    path = tmp_path / "g.jsonl.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match=r"g\.jsonl\.gz: corrupt or truncated gzip data"):
        _audit(tmp_path, [path])


def test_intact_multi_frame_zstd_is_read_whole(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    c = zstandard.ZstdCompressor()
    path = tmp_path / "m.jsonl.zst"
    path.write_bytes(c.compress(_lines(500)) + c.compress(_lines(700)))
    assert _audit(tmp_path, [path])["n_calls"] == 1200


# ---------------------------------------------------------------------------------------------------
# the same file twice, symlink loops, pipes

def test_a_file_named_twice_or_through_a_symlink_is_counted_once(tmp_path):
    (tmp_path / "logs").mkdir()
    log = _log(tmp_path / "logs" / "a.jsonl", [0] * 5)
    (tmp_path / "link.jsonl").symlink_to(log)
    s = _audit(tmp_path, [log, tmp_path / "logs" / ".." / "logs" / "a.jsonl", tmp_path / "link.jsonl",
                          tmp_path / "logs"])
    assert s["n_calls"] == 5


def test_a_recursive_glob_through_symlink_loops_counts_each_file_once(tmp_path):
    sub = tmp_path / "logs" / "sub"
    sub.mkdir(parents=True)
    _log(sub / "a.jsonl", [0] * 5)
    (sub / "up").symlink_to("..")
    (sub / "self").symlink_to(".")
    (tmp_path / "logs" / "again").symlink_to("sub")
    t = time.perf_counter()
    s = _audit(tmp_path, [f"{tmp_path}/logs/**/*.jsonl"])
    assert s["n_calls"] == 5 and time.perf_counter() - t < 60
    assert _audit(tmp_path, [tmp_path / "logs"])["n_calls"] == 5


def test_a_self_pointing_symlink_is_one_line(tmp_path):
    loop = tmp_path / "loop.jsonl"
    loop.symlink_to(loop)
    err = _one_clear_line(_cli("audit", loop, "--db", tmp_path / "a.duckdb"))
    assert "loop.jsonl: a symlink loop" in err


def test_a_fifo_is_refused_without_hanging(tmp_path):
    fifo = tmp_path / "f.jsonl"
    os.mkfifo(fifo)
    err = _one_clear_line(_cli("audit", fifo, "--db", tmp_path / "a.duckdb", timeout=60))
    assert "f.jsonl: a pipe or FIFO, not a regular file" in err


def test_a_device_is_refused(tmp_path):
    err = _one_clear_line(_cli("audit", "/dev/zero", "--db", tmp_path / "a.duckdb", timeout=60))
    assert "/dev/zero: a device, not a regular file" in err


def test_a_file_name_too_long_is_not_echoed_whole(tmp_path):
    name = "a" * 100_000
    err = _one_clear_line(_cli("audit", name, "--db", tmp_path / "a.duckdb", cwd=tmp_path))
    assert len(err) < 1000 and "100,000 characters" in err


# ---------------------------------------------------------------------------------------------------
# CSV quoting

HEADER = "session_id,system_tokens,user_tokens,assistant_tokens,cached_input_tokens\n"


def test_an_unterminated_quote_is_one_reject_and_the_records_after_it_survive(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text(HEADER + "s1,10,20,30,5\n" + 's2,10,"20,30,5\n' + "s3,10,20,30,5\n" + "s4,1,2,3,0\n"
                    + '"s5\nmulti",1,2,3,0\n' + 's6,1,2,3,"0\n')
    s = _audit(tmp_path, [path])
    assert s["n_calls"] == 4  # s1, s3, s4 and the legitimately two-line s5
    rejects = _rejects(tmp_path)
    assert [r[0] for r in rejects] == [3, 8] and all("unterminated quote" in r[1] for r in rejects)


# ---------------------------------------------------------------------------------------------------
# values

@pytest.mark.parametrize("ts", ["0000-01-01T00:00:00Z", "99999-01-01T00:00:00Z", "2025-01-01T00:00:00+99:00",
                                "1999-12-31T23:59:59Z", 99999999999, "2025-01-01T00:00:00-14:30"])
def test_impossible_times_are_rejects_naming_the_field(tmp_path, ts):
    path = tmp_path / "t.jsonl"
    path.write_text(_call(0) + "\n" + _call(1, ts=ts) + "\n" + _call(2, ts="2025-01-01T10:00:00+14:00") + "\n")
    s = _audit(tmp_path, [path])
    assert s["n_calls"] == 2 and s["n_rejects"] == 1
    assert _rejects(tmp_path)[0][0] == 2 and "timestamp is not a time" in _rejects(tmp_path)[0][1]


@pytest.mark.parametrize("option,value", [
    ("idle_timeout", float("nan")), ("idle_timeout", float("inf")), ("idle_timeout", 0.0),
    ("spor_max", float("nan")), ("spor_max", -0.1), ("kv_max_mb", float("inf")), ("kv_max_mb", -1.0),
    ("gpu_hour_price", float("inf")), ("gpu_hour_price", float("nan")),
    ("memory_limit", "-5GB"), ("memory_limit", "banana"), ("memory_limit", "1KB"), ("memory_limit", "nanGB")])
def test_bad_option_values_are_refused_naming_the_option(tmp_path, option, value):
    log = _log(tmp_path / "l.jsonl", [0])
    flag = "--" + option.replace("_", "-")
    with pytest.raises(UserError, match=flag):
        _audit(tmp_path, [log], **{option: value})
    assert not (tmp_path / "a.duckdb").exists()


@pytest.mark.slow
def test_bad_option_values_are_one_line_on_the_command_line(tmp_path):
    log = _log(tmp_path / "l.jsonl", [0])
    for args in (["--idle-timeout", "nan"], ["--memory-limit", "banana"], ["--gpu-hour-price", "inf"]):
        err = _one_clear_line(_cli("audit", log, "--db", tmp_path / "a.duckdb", *args))
        assert args[0] in err


# Every numeric option of every command, with the values that once slipped through: inf, nan, zero or negative
# where that means nothing, and sizes past any machine (1e308, 2**31, 2**63, a 23-digit number). Each is one
# line naming the option and exit 2, before any file is read or written.
_TRACE = ROOT / "tests" / "fixtures" / "traces" / "mooncake_conversation_slice.jsonl"
_HUGE = "99999999999999999999999"
_OPTION_CASES = [
    *(("replay", "--decode-tokens-per-s", v) for v in ("inf", "nan", "-1", "0", "1e308", "1e-320")),
    ("replay", "--tp", "2147483648"), ("replay", "--tp", "0"), ("replay", "--block-tokens", _HUGE),
    ("replay", "--trace-block-tokens", "0"), ("replay", "--trace-block-tokens", _HUGE),
    ("replay", "--capacity-tokens", _HUGE), ("replay", "--capacity-tokens", "9223372036854775808"),
    ("replay", "--target", "nan"), ("replay", "--gpu-memory", "1e300GB"),
    ("replay", "--gpu-memory", "99999999999999999TB"), ("replay", "--host-memory", "99999999999999999TB"),
    ("models", "--batch", "0"), ("models", "--batch", _HUGE), ("models", "--tp", "2147483648"),
    ("models", "--max-model-len", _HUGE), ("models", "--seq", "9223372036854775808"), ("models", "--seq", "0"),
    ("models", "--gpu-memory-utilization", "nan"), ("models", "--gpu-memory-utilization", "inf"),
    ("models", "--kv-memory", "1e300GB"), ("models", "--gpu-memory", "99999999999999999TB"),
    ("findings", "--run", "2147483648"), ("findings", "--run", _HUGE),
    ("audit", "--kv-bytes-per-token", "1e308"), ("audit", "--idle-timeout", "1e308"),
    ("audit", "--kv-max-mb", "1e308"), ("audit", "--gpu-hour-price", "1e308"),
    ("audit", "--memory-limit", "99999999999TB"), ("audit", "--gpu", "9" * 400 + "GB"),
]


@pytest.mark.parametrize("command,option,value", _OPTION_CASES, ids=lambda v: str(v)[:24])
def test_every_numeric_option_refuses_absurd_values_in_one_line(tmp_path, command, option, value):
    log = _log(tmp_path / "l.jsonl", [0])
    db = tmp_path / "a.duckdb"
    given = {
        "replay": ["replay", _TRACE, "--model", "llama-3.1-8b"],
        "models": ["models", "llama-3.1-8b"],
        "findings": ["findings", "--db", FIXTURE_DB],
        "audit": ["audit", log, "--db", db] + ([] if option == "--kv-bytes-per-token" else ["--model", "gpt2"]),
    }[command]
    r = cli_in_process(*given, option, value)
    assert r.returncode == 2
    assert option in _one_clear_line(r)
    assert not db.exists()



def test_ray_workers_past_any_machine_are_refused_before_ray_starts():
    pytest.importorskip("ray")
    from kvreport.runner.audit.api import AuditRequest

    with pytest.raises(UserError, match="--ray-workers 2147483648"):
        AuditRequest(kv_bytes_per_token=1000, ray="local", ray_workers=2**31)
