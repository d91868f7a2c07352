"""The fast reader of OpenAI envelope logs (DuckDB's JSON reader, line numbers from the row order) against the
line-exact one (each line read as text, then parsed): the same content must give the same audit, every reject
at its own line. A file the fast reader cannot number exactly (a blank line) is read line-exactly whole; lines
whose result needs their raw text (not JSON, no usage, no session or time) are read again line-exactly."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import audit_tables

from kvreport.runner.audit import engine, fastread, linescan


def _env(i: int, **over) -> dict:
    rec = {"session_id": f"s{i % 7}", "timestamp": f"2025-06-02T10:{i % 60:02d}:{i % 53:02d}Z",
           "request": {"model": "gpt-4o-mini",
                       "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": f"q{i}"}]},
           "response": {"model": "gpt-4o-mini-2024-07-18",
                        "usage": {"prompt_tokens": 100 + i, "completion_tokens": 5 + i % 9,
                                  "prompt_tokens_details": {"cached_tokens": (i % 3) * 32}}}}
    rec.update(over)
    return rec


def _lines(n: int = 40) -> list[str]:
    """n plain calls, then valid calls of many shapes and rejects the fast reader judges from the parsed values
    alone."""
    out = [json.dumps(_env(i)) for i in range(n)]
    out += [
        json.dumps(_env(40, session_id=None, request={"model": "m", "user": "u-1"})),      # session from request.user
        json.dumps(_env(41, system_tokens="12", timestamp=1748858400)),                  # text count, Unix time
        json.dumps(_env(42, disconnected_at="2025-06-02T11:00:00+02:00")),
        json.dumps(_env(43, response={"model": "o", "usage": {"input_tokens": "50", "output_tokens": 3,
                                                               "input_tokens_details": {"cached_tokens": None}}})),
        json.dumps(_env(44, request={"model": "r", "instructions": "sys", "input": [{"role": "user", "content": "x"}]})),
        json.dumps(_env(45, response={"usage": {"prompt_tokens": -3, "completion_tokens": 1}})),    # negative
        json.dumps(_env(46, response={"usage": {"prompt_tokens": 10, "completion_tokens": 1,
                                                "prompt_tokens_details": {"cached_tokens": 20}}})),  # cached > prompt
        json.dumps(_env(47, timestamp="2025-06-02T10:00:00+99:00")),                        # bad offset
        json.dumps(_env(48, response={"usage": {"prompt_tokens": 1.5, "completion_tokens": 1}})),   # not an integer
        json.dumps(_env(49, request="not an object")),
        json.dumps(_env(50, session_id=17, extra={"deep": [1, {"x": None}]})),
        '{"session_id": "dup", "session_id": "dup2", "response": {"usage": {"prompt_tokens": 5, "completion_tokens": 1}}, "timestamp": "2025-06-02T10:00:00Z"}',
    ]
    return out


def _needing_raw() -> list[str]:
    """Lines whose result depends on the raw text: the fast reader hands them to the line-exact one."""
    return ["{truncated", "[1, 2]", "null",
            json.dumps({"session_id": "x", "response": {"error": {"message": "rate limited"}}}),
            json.dumps(_env(60, session_id=None, request={"model": "m", "metadata": {"conversation_id": "c-9"}})),
            json.dumps(_env(61, timestamp=None, response={"created": 1748858400, "usage": {
                "prompt_tokens": 9, "completion_tokens": 1}}))]


def _write(path: Path, lines: list[str], end: str = "\n") -> Path:
    path.write_bytes(("\n".join(lines) + end).encode())
    return path


def _audit(paths: list[Path], fast: bool, tmp_path: Path) -> tuple[dict, engine.AuditResult]:
    """The whole audit on an in-memory DB; every audit table's rows but the ids and timings."""
    return audit_tables(paths, tmp_path, fast_read=fast)


def _same_audit(path: Path, tmp_path: Path) -> dict[str, str]:
    fast, res_fast = _audit([path], True, tmp_path)
    exact, res_exact = _audit([path], False, tmp_path)
    assert res_exact.readers == {str(path): "line-exact"}
    for name in exact:  # rows read again are written after the others: the order of rows is no result
        assert sorted(map(repr, fast[name])) == sorted(map(repr, exact[name])), name
    return res_fast.readers


@pytest.mark.slow
def test_a_clean_file_takes_the_fast_reader_and_gives_the_line_exact_audit(tmp_path):
    log = _write(tmp_path / "clean.jsonl", _lines())
    assert _same_audit(log, tmp_path) == {str(log): "fast"}


@pytest.mark.slow
def test_a_file_without_a_final_newline_is_counted_whole(tmp_path):
    log = _write(tmp_path / "noeol.jsonl", _lines(), end="")
    assert _same_audit(log, tmp_path) == {str(log): "fast"}


@pytest.mark.slow
def test_lines_needing_their_raw_text_are_read_again_at_their_own_numbers(tmp_path):
    lines = _lines(200)  # enough lines for these to be read again, not the whole file
    for k, extra in enumerate(_needing_raw()):
        lines.insert(5 + 7 * k, extra)  # spread through the file, none at the end
    log = _write(tmp_path / "mixed.jsonl", lines)
    assert _same_audit(log, tmp_path) == {str(log): f"fast, {len(_needing_raw())} lines line-exact"}
    tables, _ = _audit([log], True, tmp_path)
    assert {r["line"]: r["reason"] for r in tables["token_rejects"]}[6] == "malformed JSON"  # inserted at index 5


@pytest.mark.slow
def test_bytes_that_are_not_utf8_are_read_as_the_line_exact_reader_reads_them(tmp_path):
    log = tmp_path / "bytes.jsonl"
    lines = [s.encode() for s in _lines()]
    lines.insert(3, b'{"session_id": "bad \xff\xfe", "response": {"usage": {"prompt_tokens": 1, "completion_tokens": 1}}}')
    log.write_bytes(b"\n".join(lines) + b"\n")
    assert _same_audit(log, tmp_path) == {str(log): "fast, 1 lines line-exact"}


@pytest.mark.slow
@pytest.mark.parametrize("blank", ["", "   ", "\t"])
def test_a_blank_line_sends_the_whole_file_down_the_line_exact_reader(tmp_path, blank):
    """The JSON reader skips blank lines, so its row order no longer numbers the lines: one row per line is
    checked, and the file is read line-exactly (each reject keeps its number)."""
    lines = _lines()
    lines.insert(10, blank)
    log = _write(tmp_path / "blank.jsonl", lines)
    assert _same_audit(log, tmp_path) == {str(log): "line-exact"}
    tables, _ = _audit([log], True, tmp_path)
    assert [r["line"] for r in tables["token_rejects"]] == [47, 48, 49, 50]


@pytest.mark.slow
def test_a_file_mostly_needing_raw_text_is_read_line_exactly_whole(tmp_path):
    lines = _lines()[:10] + ["{broken"] * (10 // fastread.FAST_PATH_RAW_SHARE + 1)
    log = _write(tmp_path / "broken.jsonl", lines)
    assert _same_audit(log, tmp_path) == {str(log): "line-exact"}


@pytest.mark.slow
def test_a_carriage_return_keeps_a_file_off_the_fast_reader(tmp_path):
    """A lone \r is JSON whitespace to the JSON reader but damage to the line-exact one (which rejects the line):
    such a file is read line-exactly."""
    lines = _lines()
    lines[7] = lines[7].replace(", ", ",\r ", 1)
    log = _write(tmp_path / "cr.jsonl", lines)
    assert _same_audit(log, tmp_path) == {str(log): "line-exact"}
    tables, _ = _audit([log], True, tmp_path)
    assert {r["line"]: r["reason"] for r in tables["token_rejects"]}[8] == "malformed JSON"


@pytest.mark.parametrize("end", ["", "\n"])
def test_the_line_scan_counts_the_lines_the_line_exact_reader_numbers(tmp_path, end):
    log = _write(tmp_path / "n.jsonl", ["{}", "", "x", " "], end=end)
    assert linescan.scan_lines(log, linescan.MAX_LINE_BYTES).lines == 4


def test_lines_read_again_are_found_past_the_first_chunk(tmp_path):
    """The lines to read again are taken from the chunk the line scan says they are in (a file of several
    chunks), each at its own number, undamaged across chunk edges."""
    log = tmp_path / "big.jsonl"
    lines = [f'{{"n": {i}, "pad": "{"x" * (i % 97)}"}}' for i in range(400_000)]  # about 2.5 chunks
    log.write_text("\n".join(lines) + "\n")
    scan = linescan.scan_lines(log, linescan.MAX_LINE_BYTES)
    assert len(scan.chunk_lines) > 2 and scan.lines == len(lines)
    wanted = [1, 2, scan.chunk_lines[1], scan.chunk_lines[1] + 1, scan.chunk_lines[2], len(lines)]
    for first in (0, 2, 4):  # reading from the start, and from the chunk a line starts in
        copy = linescan._lines_copy(log, str(tmp_path), wanted[first:], scan.chunk_lines)
        assert copy.read_text().splitlines() == [lines[n - 1] for n in wanted[first:]]
