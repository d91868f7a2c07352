"""The groups of experiments `kvreport run --groups` selects, in run order, and what each measures. Torch-free,
so the command line checks the option without importing the measuring code; each experiment module names its
own group (runner/measure/experiments)."""
from __future__ import annotations

from .errors import UserError

GROUPS = {
    "allocator": "what the CUDA caching allocator reserves for a prefill, per shape",
    "cache": "the cache tensors themselves, a decode step's cost, fragmentation, compaction, the device's ceilings",
    "serving": "how many requests fit, compaction beside decoding, where the KV cache outweighs the weights",
    "traffic": "prefix reuse and the audit's demo workload, priced in this run's measured KV bytes",
}
# The deprecated --iterations' values, each the group it always selected.
ITERATION_GROUPS = {"1": "allocator", "2": "cache", "3": "serving", "audit": "traffic"}


def parse_groups(spec: str, option: str = "--groups") -> tuple[str, ...]:
    """'cache,serving' -> ('cache', 'serving'); anything else is one UserError naming `option`. --iterations
    (option "--iterations") takes its own values (1,2,3,audit) and gives their groups."""
    known = ITERATION_GROUPS if option == "--iterations" else GROUPS
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items or any(s not in known for s in items):
        raise UserError(f"{option} {spec!r}: expected a comma-separated list of {', '.join(known)}")
    return tuple(dict.fromkeys(ITERATION_GROUPS.get(s, s) if option == "--iterations" else s for s in items))
