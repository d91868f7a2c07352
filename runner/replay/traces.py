"""Request traces with prefix-block hashes, read line by line (streamed: nothing but the chain check is kept).

Two published shapes, told apart per record by their fields:
- Mooncake (kvcache-ai/Mooncake, FAST25-release/traces/README.md): `timestamp` (ms), `input_length`,
  `output_length`, `hash_ids`: remapped hashes of 512-token prefix blocks.
- Bailian (Alibaba's Qwen Bailian usage traces): the same four fields plus `chat_id`, `parent_chat_id` and
  `turn`, with 16-token blocks. Its timestamps are read as seconds (an assumption: the Mooncake README is the
  only field description this project holds); `--trace-block-tokens` overrides either block size.

Every line is checked on its own and a bad one is a reject naming file, line and field; the good lines are
replayed. Checks: hashes present and integers, lengths non-negative integers, one hash per trace block of
the prompt (ceil(input_length / block) of them: otherwise the block size does not divide the prompt as the
trace says), a prefix chain (each hash always follows the same hash, so equal ids mean equal prefixes:
the check keeps one parent per distinct hash), timestamps never going backwards (across the files, read in
the order given, as pieces of one log).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

SHAPES = {"mooncake": 512, "bailian": 16}  # the trace's own block size in tokens, per shape
_TIME_SCALE_MS = {"mooncake": 1.0, "bailian": 1000.0}
_NO_PARENT = -1  # the chain parent of a first block


@dataclass(frozen=True)
class Reject:
    file: str
    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.field}: {self.reason}"


@dataclass(frozen=True)
class TraceRequest:
    """One replayable request: arrival in ms, prompt and output tokens, its trace-block hashes in order."""
    t_ms: float
    input_tokens: int
    output_tokens: int
    hashes: tuple[int, ...]
    trace_block: int


def shape_of(record: dict) -> str | None:
    """The shape a record's fields say: Bailian carries chat ids, Mooncake only the four common fields."""
    if any(k in record for k in ("chat_id", "parent_chat_id", "turn")):
        return "bailian"
    if "hash_ids" in record or "timestamp" in record:
        return "mooncake"
    return None


def _count(record: dict, key: str) -> int | str:
    value = record.get(key)
    if value is None:
        return "missing"
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or \
            value in (math.inf, -math.inf) or value != int(value) or value < 0:
        return f"{value!r} is not a non-negative integer"
    return int(value)


class TraceReader:
    """Reads PATHs in order and yields the good requests; `rejects` lists the bad lines, `n_lines` and
    `n_blank` count what was read. One reader is one pass: the chain and time checks carry across files."""

    def __init__(self, paths: list[Path], trace_block_tokens: int | None = None, progress=None):
        self.paths = [Path(p) for p in paths]
        self.trace_block_tokens = trace_block_tokens
        self.rejects: list[Reject] = []
        self.n_lines = self.n_blank = 0
        self.shapes: dict[str, int] = {}
        self._parent: dict[int, int] = {}
        self._last_t = -math.inf
        self._progress = progress

    def _reject(self, path: Path, line: int, field: str, reason: str) -> None:
        self.rejects.append(Reject(str(path), line, field, reason))

    def __iter__(self) -> Iterator[TraceRequest]:
        for path in self.paths:
            with open(path, "rb") as f:
                for number, raw in enumerate(f, 1):
                    self.n_lines += 1
                    if self._progress is not None and self.n_lines % 65536 == 0:
                        self._progress(self.n_lines)
                    if not raw.strip():
                        self.n_blank += 1
                        continue
                    request = self._read(path, number, raw)
                    if request is not None:
                        yield request

    def _read(self, path: Path, number: int, raw: bytes) -> TraceRequest | None:
        try:
            record = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            self._reject(path, number, "line", f"not JSON ({str(exc).splitlines()[0][:80]})")
            return None
        if not isinstance(record, dict):
            self._reject(path, number, "line", "not a JSON object")
            return None
        shape = shape_of(record)
        if shape is None:
            self._reject(path, number, "hash_ids", "missing (neither a Mooncake nor a Bailian record)")
            return None
        block = self.trace_block_tokens or SHAPES[shape]
        stamp = record.get("timestamp")
        if isinstance(stamp, bool) or not isinstance(stamp, (int, float)) or not math.isfinite(stamp) or stamp < 0:
            self._reject(path, number, "timestamp", "missing" if stamp is None else
                         f"{stamp!r} is not a non-negative number")
            return None
        t_ms = float(stamp) * _TIME_SCALE_MS[shape]
        values: dict[str, int] = {}
        for key in ("input_length", "output_length"):
            value = _count(record, key)
            if isinstance(value, str):
                self._reject(path, number, key, value)
                return None
            values[key] = value
        hashes = record.get("hash_ids")
        if not isinstance(hashes, list) or not hashes:
            self._reject(path, number, "hash_ids", "missing" if hashes is None else
                         "empty" if hashes == [] else "not a list")
            return None
        if not all(isinstance(h, int) and not isinstance(h, bool) for h in hashes):
            self._reject(path, number, "hash_ids", "not a list of integers")
            return None
        expected = -(-values["input_length"] // block)
        if len(hashes) != expected:
            self._reject(path, number, "hash_ids",
                         f"{len(hashes)} hashes for input_length {values['input_length']} at {block}-token blocks "
                         f"(expected {expected}): the block size does not divide the prompt as the trace says")
            return None
        parent_of = self._parent
        seen_here: dict[int, int] = {}
        previous = _NO_PARENT
        for i, h in enumerate(hashes):
            known = parent_of.get(h, seen_here.get(h))
            if h in seen_here or (known is not None and known != previous):
                self._reject(path, number, "hash_ids",
                             f"not a prefix chain: hash {h} at block {i} follows "
                             f"{'nothing' if previous == _NO_PARENT else previous}, elsewhere "
                             f"{'nothing' if known == _NO_PARENT else known}")
                return None
            seen_here[h] = previous
            previous = h
        if t_ms < self._last_t:
            self._reject(path, number, "timestamp", f"{record['timestamp']!r} goes backwards (the line before "
                         f"was at {self._last_t / _TIME_SCALE_MS[shape]:g})")
            return None
        self._last_t = t_ms
        parent_of.update(seen_here)
        self.shapes[shape] = self.shapes.get(shape, 0) + 1
        return TraceRequest(t_ms, values["input_length"], values["output_length"], tuple(hashes),
                            block)
