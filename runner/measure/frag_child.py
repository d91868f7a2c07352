"""The fragmentation scenario, in a fresh process so PYTORCH_CUDA_ALLOC_CONF (read once, when CUDA starts) can
differ between runs; torch only, the model's KV shapes are enough.
    python -m kvreport.runner.measure.frag_child '{"device": "cuda:0", "n_layers": 12, ...}'
Prints one JSON object of allocator counters per phase; exit 1 on an error, 3 on a non-CUDA device.
Method: docs/methods/fragmentation.md."""
from __future__ import annotations

import os
import random
import sys

import torch

from .child_process import child_cuda_device, child_main
from .probes import CudaAllocator


def plan(spec: dict) -> tuple[list[int], list[int]]:
    """(prompt length per request, indices of the requests evicted): deterministic in spec['seed']."""
    rng = random.Random(spec["seed"])
    lengths = [rng.randint(spec["min_len"], spec["max_len"]) for _ in range(spec["n_requests"])]
    n_evict = max(1, round(spec["evict_fraction"] * spec["n_requests"]))
    evicted = sorted(rng.sample(range(spec["n_requests"]), n_evict))
    return lengths, evicted


def scenario(spec: dict) -> dict:
    device = child_cuda_device(spec, "frag_child")
    dtype = getattr(torch, spec["dtype"])
    kv_heads, head_dim, n_layers = spec["n_kv_heads"], spec["head_dim"], spec["n_layers"]
    lengths, evicted = plan(spec)

    alloc = CudaAllocator(device)

    def stats(phase: str, live: int, evicted_bytes: int) -> dict:
        """The allocator's counters after a phase, the expandable segments it holds, and the peak reserved
        during the phase (then the peak is reset, so each phase reports its own)."""
        segments = alloc.expandable_segments()
        row = {"phase": phase, **alloc.stats(), "live_requests": live, "evicted_bytes": evicted_bytes,
               "peak_reserved_bytes": alloc.peak_reserved(),
               "expandable_segments": segments[0] if segments else None,
               "expandable_segment_bytes": segments[1] if segments else None}
        alloc.reset_peak()
        return row

    requests: list[list[torch.Tensor]] = []
    alloc.reset_peak()  # the first phase's peak covers admission and the cache growth of decoding
    with torch.inference_mode():
        for n in lengths:
            requests.append([torch.empty(1, kv_heads, n, head_dim, dtype=dtype, device=device).normal_()
                             for _ in range(2 * n_layers)])
        for _ in range(spec["decode_steps"]):
            for req in requests:
                for j, t in enumerate(req):
                    req[j] = torch.cat([t, t[:, :, -1:]], dim=2)  # old tensor freed as the new one lands
        phases = [stats("admitted", len(requests), 0)]

        evicted_bytes = 0
        for i in evicted:
            evicted_bytes += sum(t.numel() * t.element_size() for t in requests[i])
            requests[i] = None
        live = sum(r is not None for r in requests)
        phases.append(stats("after_evict", live, evicted_bytes))
        torch.cuda.empty_cache()
        phases.append(stats("after_empty_cache", live, evicted_bytes))
        kv_live = sum(t.numel() * t.element_size() for r in requests if r is not None for t in r)
    segments = alloc.expandable_segments()
    return {"phases": phases, "kv_live_bytes": kv_live,
            "expandable_in_use": None if segments is None else segments[0] > 0,
            "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""), "torch_version": torch.__version__}


if __name__ == "__main__":
    sys.exit(child_main("frag_child", scenario, sys.argv))
