"""Iteration 1's allocator logic, driven by an injected memory probe (no CUDA needed)."""
import pytest
import torch

from kvreport.runner.measure.experiments import RunContext, Skip
from kvreport.runner.measure.experiments import allocator_memory
from kvreport.runner.measure.models import load_model


class FakeAllocator:
    """Counts live tensor bytes the way the CUDA allocator's memory_allocated would."""

    def probe(self) -> int:
        import gc
        import warnings

        gc.collect()
        total, seen = 0, set()
        with warnings.catch_warnings():  # isinstance() pokes deprecated torch module attributes
            warnings.simplefilter("ignore")
            tensors = [o for o in gc.get_objects() if isinstance(o, torch.Tensor)]
        for t in tensors:
            ptr = t.untyped_storage().data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                total += t.untyped_storage().nbytes()
        return total


@pytest.mark.slow
def test_allocator_delta_counts_logits_and_cache_only_delta_is_the_cache():
    lm = load_model("tiny-gpt2", torch.device("cpu"), torch.float32)
    fake = FakeAllocator()
    ids = torch.randint(0, 512, (2, 16))
    m = allocator_memory.measure_prefill_delta(lm.model, ids, fake.probe)
    kv = m["tensor_kv_bytes"]
    assert kv == 2 * 2 * 2 * 4 * 16 * 16 * 4  # layers x K/V x batch x heads x seq x head_dim x fp32
    # Right after the prefill the delta holds the logits too: it over-counts the cache.
    assert m["delta_bytes"] >= kv + m["logits_bytes"]
    assert m["logits_bytes"] == 2 * 16 * 512 * 4
    # With the logits dropped, only the cache remains.
    assert m["cache_only_delta_bytes"] == kv


@pytest.mark.slow
def test_run_with_injected_probe_writes_rows():
    lm = load_model("tiny-gpt2", torch.device("cpu"), torch.float32)
    ctx = RunContext(run_id=1, device=torch.device("cpu"), dtype=torch.float32, loaded=lm, quick=True,
                     memory_probe=FakeAllocator().probe)
    with torch.inference_mode():
        result = allocator_memory.run(ctx)
    rows = result.tables["allocator_memory"]
    assert rows and all(r["cache_only_delta_bytes"] == r["expected_kv_bytes"] for r in rows)
    assert all(r["bytes_per_token"] > r["formula_bytes_per_token"] for r in rows)


def test_cpu_without_probe_is_skipped_with_reason():
    import pytest

    lm = load_model("tiny-gpt2", torch.device("cpu"), torch.float32)
    ctx = RunContext(run_id=1, device=torch.device("cpu"), dtype=torch.float32, loaded=lm, quick=True)
    with pytest.raises(Skip, match="CUDA caching allocator"):
        allocator_memory.run(ctx)
