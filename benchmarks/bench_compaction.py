"""KV compaction benchmark: every method of runner/measure/compaction.py per workload size, each against the
copy roof measured at the same size (runner/measure/ceilings.py, same harness, same cache flush).

    python benchmarks/bench_compaction.py [--device auto|cpu|cuda] [--model gpt2] [--dtype auto] [--repeats N]

Prints per size the GB/s of the copy roof (timed interleaved with the methods, same flush) and of naive,
batched, batched16 (16-byte ATen elements),
triton and triton_layers (the Triton kernel once per layer: same element width, naive's launch count),
each method's % of the same-size roof, and whether every method gathered exactly. Sizes of at least
4x the last-level cache moved are DRAM measurements (marked D); below that the roof is an L2/LLC roof.
Target on a GPU: triton >= 85% (stretch 95%) of the same-size copy roof for every workload moving
256 MiB or more; the exit status is 1 when a GPU misses it or any method is wrong. On a CPU the Triton
methods do not run (Triton compiles for GPUs; CI checks the kernel under its interpreter) and the ratios
are reported without a target. GPU device times exclude host dispatch (runner/measure/timing.py).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

TARGET_ROOF = 0.85
STRETCH_ROOF = 0.95
TARGET_MIN_MOVED = 256 << 20
METHODS = ("naive", "batched", "batched16", "triton", "triton_layers")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="auto")
    ap.add_argument("--model", default="gpt2", help="architecture whose KV geometry is used (no weights load)")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--repeats", type=int, default=None)
    args = ap.parse_args(argv)

    import torch

    from kvreport.runner.measure import compaction as kc
    from kvreport.runner.measure.ceilings import roof_kernel, theoretical_peak
    from kvreport.runner.measure.devices import dtype_name, resolve_device, resolve_dtype
    from kvreport.runner.core.errors import UserError
    from kvreport.runner.core.kv_formula import kv_shape
    from kvreport.runner.measure.models import load_config
    from kvreport.runner.measure.probes import Flusher
    from kvreport.runner.measure.timing import gbs, time_interleaved

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
    max_pos = getattr(config, "n_positions", None) or getattr(config, "max_position_embeddings", 2048)
    warmup, repeats = (5, args.repeats or 30) if cuda else (2, args.repeats or 10)
    flusher = Flusher(dev)
    peak, source = theoretical_peak(dev)
    name = torch.cuda.get_device_name(dev) if cuda else "cpu"
    print(f"device {name} · {args.model} KV geometry at {dtype_name(dtype)} "
          f"({shape.bytes_per_token(dtype_bytes):,} B/token) · last-level cache {_size(flusher.llc)} · peak "
          + (f"{peak:,.0f} GB/s ({source})" if peak else f"n/a ({source})"))
    head = f"{'live KV':>10} {'moved':>10} {'roof GB/s':>10} " + " ".join(f"{m:>13}" for m in METHODS) + "  correct"
    print(head + "   (GB/s, % of the same-size copy roof)")
    misses, notes = [], {}
    for target in kc.targets(cuda, quick=False):
        plan = kc.plan_for(target, shape, dtype_bytes, max_pos)
        if cuda and plan.footprint > 0.7 * torch.cuda.mem_get_info(dev)[0]:
            print(f"{_size(plan.kv_bytes):>10}  skipped: does not fit in free memory")
            continue
        w = kc.make_workload(plan.n_tensors, plan.n_live, plan.row, dtype, dev)
        variants, ok, skipped = kc.checked_methods(w, METHODS)
        notes.update(skipped)
        flush = flusher.needed(w.bytes_moved)
        roof_fn, roof_moved = roof_kernel(dev, "copy", w.bytes_moved)  # timed interleaved with the methods
        t = time_interleaved({**variants, "roof": roof_fn}, dev, warmup=warmup, repeats=repeats,
                             setup=flusher if flush else None)
        del roof_fn
        roof = gbs(roof_moved, t.pop("roof").median_ms)
        cells = []
        for m in METHODS:
            if m in t:
                rate = gbs(w.bytes_moved, t[m].median_ms)
                cells.append(f"{rate:>6.1f} {rate / roof:>5.0%}")
            else:
                cells.append(f"{'n/a':>13}")
        dram = "D" if w.bytes_moved >= kc.FLUSH_FACTOR * flusher.llc else " "
        print(f"{_size(w.kv_bytes):>10} {_size(w.bytes_moved):>9}{dram} {roof:>10.1f} " + " ".join(cells)
              + f"  {all(ok.values())}" + (" (wide spread)" if any(v.wide for v in t.values()) else ""))
        if cuda and w.bytes_moved >= TARGET_MIN_MOVED and "triton" in t:
            ratio = gbs(w.bytes_moved, t["triton"].median_ms) / roof
            if ratio < TARGET_ROOF:
                misses.append(f"{_size(w.bytes_moved)} ({ratio:.0%})")
        if not all(ok.values()):
            misses.append(f"{_size(w.kv_bytes)} incorrect: {', '.join(m for m, v in ok.items() if not v)}")
        del w
    for m, why in notes.items():
        print(f"{m}: not run ({why})")
    if cuda and "triton" in notes:
        misses.append(f"triton did not run ({notes['triton']})")
    if cuda:
        verdict = "met" if not misses else f"MISSED at {', '.join(misses)}"
        print(f"target: triton >= {TARGET_ROOF:.0%} (stretch {STRETCH_ROOF:.0%}) of the same-size copy roof "
              f"from {_size(TARGET_MIN_MOVED)} moved: {verdict}")
        return 1 if misses else 0
    print("CPU: no target; the ratios above are what this CPU reaches" + (f"; {', '.join(misses)}" if misses else ""))
    return 1 if misses else 0


def _size(n: int) -> str:
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


if __name__ == "__main__":
    sys.exit(main())
