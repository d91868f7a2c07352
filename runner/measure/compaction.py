"""The KV compaction workload, shared by the compaction and interference experiments and the benchmark: a pool
[2 x layers, slots, row] in the model's cache geometry whose live half (`Workload`) is gathered into a fresh
buffer by each method (METHODS: naive, batched, triton, triton_layers; batched16 for the benchmark), all
moving the same bytes. Sizes come from `planned_workloads`; `probe_triton` says why the Triton methods cannot
run here. Method: docs/methods/compaction.md."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import torch

from ..core.errors import describe_exception
from ..core.kv_formula import kv_shape
from .probes import GIB, KIB, MIB, cuda_free_bytes

# triton is optional at run time (a CPU-only install need not have it, and a broken install can fail at
# import): the Triton methods are then skipped with the import's error as their reason (`probe_triton`).
# The module, not its function, is bound here so a test can replace `triton_gather.gather_rows`.
try:
    from . import triton_gather
    TRITON_IMPORT_ERROR: str | None = None
except ImportError as exc:
    triton_gather, TRITON_IMPORT_ERROR = None, f"triton is not installed ({exc})"
except Exception as exc:  # noqa: BLE001 - see above
    triton_gather, TRITON_IMPORT_ERROR = None, f"importing the Triton gather failed: {describe_exception(exc)}"
# Live KV bytes per workload. GPU: up to 4 GiB live (8 GiB moved), far beyond any L2; CPU: 64 MiB live =
# 128 MiB moved = 4x a 32 MiB LLC, the smallest size that is a DRAM measurement there.
GPU_TARGETS = [64 * KIB, 256 * KIB, MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, GIB, 4 * GIB]
CPU_TARGETS = [64 * KIB, MIB, 16 * MIB, 64 * MIB]
CPU_TARGETS_QUICK = [64 * KIB, MIB, 64 * MIB]
SEED = 1234
METHODS = ("naive", "batched", "triton", "triton_layers")
TRITON_METHODS = ("triton", "triton_layers")


class Workload:
    """pool [2L, slots, row] in the model dtype; idx: the live slots (sorted, on the device);
    dst [2L, live, row]. Views are made once here so the timed calls do only the launches."""

    def __init__(self, pool: torch.Tensor, idx: torch.Tensor):
        n_tensors, slots, row = pool.shape
        self.pool, self.idx = pool, idx
        self.dst = torch.empty(n_tensors, len(idx), row, dtype=pool.dtype, device=pool.device)
        self._pairs = [(pool[j], self.dst[j]) for j in range(n_tensors)]
        # Row j * slots + i of the pool seen as [2L * slots, row] is slot i of tensor j.
        self.flat_idx = (torch.arange(n_tensors, device=pool.device)[:, None] * slots + idx[None, :]).reshape(-1)
        self._src_rows, self._dst_rows = _wide_rows(pool), _wide_rows(self.dst)
        self._src_flat = pool.view(n_tensors * slots, row)
        self._dst_flat = self.dst.view(n_tensors * len(idx), row)

    @property
    def kv_bytes(self) -> int:
        return self.dst.numel() * self.dst.element_size()

    @property
    def bytes_moved(self) -> int:
        return 2 * self.kv_bytes  # read once + written once

    def naive(self) -> None:
        for src, dst in self._pairs:
            torch.index_select(src, 0, self.idx, out=dst)

    def batched(self) -> None:
        torch.index_select(self._src_rows, 0, self.flat_idx, out=self._dst_rows)

    def batched16(self) -> Callable[[], None] | None:
        """The batched gather over 16-byte elements, or None where a row is not a whole number of them."""
        if self._src_rows.element_size() != 8 or self._src_rows.shape[1] % 2:
            return None
        src, dst = self._src_rows.view(torch.complex128), self._dst_rows.view(torch.complex128)
        try:
            torch.index_select(src, 0, self.flat_idx, out=dst)
        except RuntimeError:  # a build without complex index_select on this device
            return None
        return lambda: torch.index_select(src, 0, self.flat_idx, out=dst)

    def triton(self) -> None:
        triton_gather.gather_rows(self._src_flat, self.flat_idx, self._dst_flat)

    def triton_layers(self) -> None:
        for src, dst in self._pairs:
            triton_gather.gather_rows(src, self.idx, dst)

    def launches(self, method: str) -> int:
        return self.pool.shape[0] if method in ("naive", "triton_layers") else 1

    def element_bytes(self, method: str) -> int:
        """Bytes per element the method's kernel moves: the model dtype (naive), 8-byte words (batched),
        16-byte words (batched16; the Triton kernel's vector accesses on 16-byte-aligned rows)."""
        if method in ("batched16", "triton", "triton_layers"):
            return 16
        return self._src_rows.element_size() if method == "batched" else self.pool.element_size()

    def expected(self) -> torch.Tensor:
        # Reference by advanced indexing: a different code path from every method.
        return self.pool[:, self.idx]

    def methods(self, names=METHODS) -> tuple[dict[str, Callable[[], None]], dict[str, str]]:
        """({method: callable} that can run here, {method: why not} for the others)."""
        ok, skipped = {}, {}
        reason = triton_unavailable(self.pool.device)
        for name in names:
            if name in TRITON_METHODS and reason:
                skipped[name] = reason
            elif name == "batched16":
                fn = self.batched16()
                if fn is None:
                    skipped[name] = "rows are not whole 16-byte words, or no complex index_select here"
                else:
                    ok[name] = fn
            else:
                ok[name] = getattr(self, name)
        return ok, skipped


_TRITON_PROBED: dict[str, str | None] = {}


def triton_unavailable(device) -> str | None:
    """Why the Triton methods cannot run on `device`, or None when they can. Importing triton is not
    enough: it builds its launcher with a C compiler and compiles the kernel at the first launch, and
    either can fail on a box that imports it fine. So the first call per device launches a tiny gather,
    synchronises and checks it (`probe_triton`); its failure is the reason, remembered for the run."""
    interpreted = os.environ.get("TRITON_INTERPRET") == "1"
    if device.type != "cuda" and not interpreted:
        return ("Triton compiles for GPUs only; on the CPU its interpreter is a correctness check "
                "(tested in CI), not a kernel worth timing")
    key = f"{device}{' (interpreted)' if interpreted else ''}"
    if key not in _TRITON_PROBED:
        _TRITON_PROBED[key] = probe_triton(device)
    return _TRITON_PROBED[key]


def probe_triton(device) -> str | None:
    """Launch the row gather once on a few tiny rows, synchronise, compare with advanced indexing: None
    when it worked, else the reason (exception type and first line of its message)."""
    if TRITON_IMPORT_ERROR:
        return TRITON_IMPORT_ERROR
    try:
        src = torch.arange(4 * 64, dtype=torch.float32, device=device).view(4, 64)
        idx = torch.tensor([3, 0, 2], device=device)
        out = triton_gather.gather_rows(src, idx, torch.empty(3, 64, dtype=torch.float32, device=device))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if not torch.equal(out, src[idx]):
            return "the Triton gather's probe launch returned wrong rows"
    except Exception as exc:  # noqa: BLE001 - no C compiler, no ptxas, a driver too old: the reason
        return f"the Triton gather's probe launch failed: {describe_exception(exc)}"
    return None


def _wide_rows(t: torch.Tensor) -> torch.Tensor:
    """t [a, b, row] as [a * b, words] of the widest integer type dividing a row: same bytes, fewer and
    wider elements per thread."""
    rows = t.view(t.shape[0] * t.shape[1], t.shape[2])
    row_bytes = t.shape[2] * t.element_size()
    for wide in (torch.int64, torch.int32, torch.int16):
        if row_bytes % wide.itemsize == 0 and wide.itemsize >= t.element_size():
            return rows.view(wide)
    return rows


def make_workload(n_tensors: int, n_live: int, row: int, dtype, device, seed: int = SEED) -> Workload:
    """A pool of 2 x n_live slots, half of them evicted at random (fixed seed), holding random data."""
    slots = 2 * n_live
    g = torch.Generator(device=device)
    g.manual_seed(seed)
    pool = torch.empty(n_tensors, slots, row, dtype=dtype, device=device).normal_(generator=g)
    idx = torch.randperm(slots, generator=torch.Generator().manual_seed(seed))[:n_live].sort().values
    return Workload(pool, idx.to(device))


def is_correct(w: Workload, method) -> bool:
    """Poison the destination, run `method` once, compare exactly with the reference gather."""
    w.dst.fill_(float("nan"))
    method()
    return bool(torch.equal(w.dst, w.expected()))


def checked_methods(w: Workload, names=METHODS
                    ) -> tuple[dict[str, Callable[[], None]], dict[str, bool], dict[str, str]]:
    """({method: callable}, {method: exactly correct}, {method: why not run}) for the methods that run
    here: each is run once under the correctness check first, and one that raises there is skipped with
    the exception's type and message instead of costing the other methods their rows."""
    methods, skipped = w.methods(names)
    ok, correct = {}, {}
    for name, fn in methods.items():
        try:
            correct[name] = is_correct(w, fn)
            if w.pool.device.type == "cuda":
                torch.cuda.synchronize(w.pool.device)  # an asynchronous failure surfaces here, for this method
        except Exception as exc:  # noqa: BLE001 - see the docstring
            skipped[name] = f"failed its first run: {describe_exception(exc)}"
            continue
        ok[name] = fn
    return ok, correct, skipped


def shape_for(target_bytes: int, bytes_per_token: int, max_seq: int) -> tuple[int, int]:
    """(live requests, seq_len) whose live KV is close to target_bytes: 512-token requests (or the model's
    limit), fewer tokens in one request below that."""
    seq_cap = min(512, max_seq)
    tokens = max(1, round(target_bytes / bytes_per_token))
    if tokens < seq_cap:
        return 1, tokens
    return max(1, round(tokens / seq_cap)), seq_cap


def footprint_bytes(n_live: int, n_tensors: int, row: int, dtype_bytes: int) -> int:
    """Device bytes of a workload: pool (2x live) + destination + the reference gather of the check +
    the same-size copy roof timed beside it (source and destination, live bytes each)."""
    return 6 * n_live * n_tensors * row * dtype_bytes


@dataclass(frozen=True)
class Plan:
    """One compaction size in a model's cache geometry."""
    target: int
    n_live: int
    seq_len: int
    n_tensors: int
    row: int           # elements per slot row
    dtype_bytes: int

    @property
    def kv_bytes(self) -> int:
        return self.n_live * self.n_tensors * self.row * self.dtype_bytes

    @property
    def bytes_moved(self) -> int:
        return 2 * self.kv_bytes

    @property
    def footprint(self) -> int:
        return footprint_bytes(self.n_live, self.n_tensors, self.row, self.dtype_bytes)


def plan_for(target: int, shape, dtype_bytes: int, max_seq: int) -> Plan:
    n_live, seq_len = shape_for(target, shape.bytes_per_token(dtype_bytes), max_seq)
    return Plan(target, n_live, seq_len, 2 * shape.n_layers, shape.n_kv_heads * seq_len * shape.head_dim,
                dtype_bytes)


def targets(is_cuda: bool, quick: bool) -> list[int]:
    return GPU_TARGETS if is_cuda else (CPU_TARGETS_QUICK if quick else CPU_TARGETS)


def planned_workloads(ctx) -> list[Plan]:
    """The compaction sizes of this run that fit in free memory (with 30% to spare on a GPU)."""
    shape = kv_shape(ctx.config)
    plans = [plan_for(t, shape, ctx.dtype_bytes, ctx.max_positions) for t in targets(ctx.is_cuda, ctx.quick)]
    if ctx.is_cuda:
        free = cuda_free_bytes(ctx.device)[0]
        plans = [p for p in plans if p.footprint < 0.7 * free]
    return plans
