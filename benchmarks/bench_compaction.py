"""KV compaction benchmark: naive (one copy per layer and tensor) vs batched (one gather) per workload
size, against the measured copy roof.

    python benchmarks/bench_compaction.py [--device auto|cpu|cuda] [--model gpt2] [--dtype auto]

Prints per size: naive and batched GB/s, batched / roof and batched / naive. Target on a GPU: batched
reaches >= 85% of the copy roof for every workload of 64 MiB of live KV or more; the exit status is 1
when a GPU misses it. On a CPU the ratios are reported without a target. On a GPU it also reports a
16-byte-element variant of the batched gather, to show whether wider loads would close a gap.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

TARGET_ROOF = 0.85
TARGET_MIN_KV = 64 << 20


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--model", default="gpt2", help="architecture whose KV geometry is used (no weights load)")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)

    import torch

    from kvreport.runner.ceilings import measure_copy_roof, theoretical_peak
    from kvreport.runner.devices import dtype_name, resolve_device, resolve_dtype
    from kvreport.runner.errors import UserError
    from kvreport.runner.experiments import kv_compact_v2 as kc
    from kvreport.runner.kv_formula import kv_shape
    from kvreport.runner.models import load_config
    from kvreport.runner.timing import time_interleaved

    try:
        dev = resolve_device(args.device)
        config = load_config(args.model)[0]
        dtype = resolve_dtype(args.dtype, dev, args.model)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    cuda = dev.type == "cuda"
    shape = kv_shape(config)
    dtype_bytes = torch.tensor([], dtype=dtype).element_size()
    bpt = shape.bytes_per_token(dtype_bytes)
    n_tensors = 2 * shape.n_layers
    max_pos = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", 2048)
    warmup, repeats = (5, args.repeats or 30) if cuda else (3, args.repeats or 15)

    roof = measure_copy_roof(dev)
    peak, source = theoretical_peak(dev)
    name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    print(f"device {name} · {args.model} KV geometry at {dtype_name(dtype)} ({bpt:,} B/token)")
    print(f"copy roof {roof['roof_gbs']:,.1f} GB/s (p25-p75 {roof['roof_p25_gbs']:,.1f}-{roof['roof_p75_gbs']:,.1f}, "
          f"n={roof['roof_n']}, {roof['roof_bytes'] / 1e9:.2f} GB moved); peak "
          + (f"{peak:,.0f} GB/s ({source})" if peak else f"n/a ({source})"))
    llc = kc.last_level_cache_bytes(dev)
    flush = torch.empty(kc.FLUSH_FACTOR * llc // 4, dtype=torch.float32, device=dev)
    head = f"{'live KV':>10} {'moved':>10} {'naive GB/s':>11} {'batched GB/s':>13} {'batched/roof':>13} " \
           f"{'batched/naive':>14} {'correct':>8}" + (f" {'16B/roof':>9}" if cuda else "")
    print(head)
    misses = []
    for target in (kc.GPU_TARGETS if cuda else kc.CPU_TARGETS):
        n_live, seq_len = kc.shape_for(target, bpt, max_pos)
        row = shape.n_kv_heads * seq_len * shape.head_dim
        footprint = 3 * n_live * n_tensors * row * dtype_bytes
        if cuda and footprint * 4 / 3 > 0.7 * torch.cuda.mem_get_info(dev)[0]:
            print(f"{target / 2**20:>8.1f}Mi  skipped: does not fit in free memory")
            continue
        w = kc.make_workload(n_tensors, n_live, row, dtype, dev)
        variants = {"naive": w.naive, "batched": w.batched}
        if cuda:
            wide16 = _wide16(w)
            if wide16 is not None:
                variants["batched16"] = wide16
        ok = all(kc.is_correct(w, fn) for fn in variants.values())
        setup = (lambda _n: flush.zero_()) if footprint < kc.FLUSH_FACTOR * llc else None
        t = time_interleaved(variants, dev, warmup=warmup, repeats=repeats, setup=setup)
        moved = 2 * w.kv_bytes
        gbs = {k: moved / (v.median_ms * 1e-3) / 1e9 for k, v in t.items()}
        ratio = gbs["batched"] / roof["roof_gbs"]
        line = (f"{_size(w.kv_bytes):>10} {_size(moved):>10} {gbs['naive']:>11.1f} {gbs['batched']:>13.1f} "
                f"{ratio:>12.1%} {gbs['batched'] / gbs['naive']:>13.2f}x {str(ok):>8}")
        if cuda:
            line += f" {gbs['batched16'] / roof['roof_gbs']:>8.1%}" if "batched16" in gbs else f" {'n/a':>9}"
        print(line + (" (wide spread)" if any(v.wide for v in t.values()) else ""))
        if cuda and w.kv_bytes >= TARGET_MIN_KV and ratio < TARGET_ROOF:
            misses.append(_size(w.kv_bytes))
        if not ok:
            misses.append(f"{_size(w.kv_bytes)} incorrect")
        del w
    if cuda:
        verdict = "met" if not misses else f"MISSED at {', '.join(misses)}"
        print(f"target: batched >= {TARGET_ROOF:.0%} of the copy roof for live KV >= 64 MiB: {verdict}")
        return 1 if misses else 0
    print("CPU: no target; the ratios above are what this CPU reaches")
    return 0


def _wide16(w):
    """The batched gather over 16-byte elements (complex128 as an opaque 16-byte word), or None."""
    import torch

    if w._src_rows.shape[1] % 2 or w._src_rows.element_size() != 8:
        return None
    src, dst = w._src_rows.view(torch.complex128), w._dst_rows.view(torch.complex128)
    try:
        torch.index_select(src, 0, w.flat_idx, out=dst)
    except RuntimeError:
        return None
    return lambda: torch.index_select(src, 0, w.flat_idx, out=dst)


def _size(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


if __name__ == "__main__":
    sys.exit(main())
