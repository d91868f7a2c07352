"""One deliberate CUDA out-of-memory in a child process, proving the recovery path without risking the run.
    python -m kvreport.runner.measure.oom_child '{"device": "cuda:0"}'
Prints one JSON object: {"caught": bool, "allocated_at_oom": bytes, "freed": bool, "forward_ok": bool,
"error": first line}. Exit 3 on a non-CUDA device (nothing to prove there), 1 on any other failure.
Method: docs/methods/pressure.md."""
from __future__ import annotations

import sys

import torch

from .child_process import child_cuda_device, child_main
from .kv_cache import forward_with_cache
from .models import load_model
from .probes import CudaAllocator

CHUNK = 256 << 20


def scenario(spec: dict) -> dict:
    device = child_cuda_device(spec, "oom_child")
    torch.cuda.synchronize()
    alloc = CudaAllocator(device)
    base = alloc.allocated()
    blocks, caught, error = [], False, None
    limit = int(spec.get("max_bytes", 1 << 50)) // CHUNK  # a bound for tests; none on a real run
    try:
        while len(blocks) < limit:
            blocks.append(torch.empty(CHUNK, dtype=torch.uint8, device=device))
    except torch.cuda.OutOfMemoryError as exc:
        caught, error = True, (str(exc).splitlines() or [""])[0][:200]
    allocated_at_oom = len(blocks) * CHUNK
    blocks.clear()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    freed = alloc.allocated() == base

    loaded = load_model("tiny-gpt2", device, torch.float32)
    with torch.inference_mode():
        logits, _ = forward_with_cache(loaded.model, torch.randint(0, 100, (1, 8), device=device))
        forward_ok = bool(torch.isfinite(logits).all().item()) and logits.shape[-1] == loaded.config.vocab_size
    return {"caught": caught, "allocated_at_oom": allocated_at_oom, "freed": freed, "forward_ok": forward_ok,
            "error": error}


if __name__ == "__main__":
    sys.exit(child_main("oom_child", scenario, sys.argv))
