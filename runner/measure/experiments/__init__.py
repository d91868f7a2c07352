"""Experiment registry: each module in this package is one experiment, discovered, with NAME (its name in the
`experiments` table), GROUP (one of core/groups.py GROUPS, what `--groups` selects), ORDER (lower runs first),
TABLES (the tables it fills, DDL in runner/core/schema/) and `run(ctx: RunContext) -> Result`. The run refuses
rows for tables it does not name; one that cannot run here raises Skip("why"), recorded as skipped with the reason.
Method write-ups: docs/methods/README.md."""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from types import ModuleType
from typing import Callable

import torch

from ...core.groups import GROUPS


class Skip(Exception):
    """Raised by an experiment that cannot run on this device; the message is the recorded reason."""


@dataclass
class Result:
    tables: dict[str, list[dict]] = field(default_factory=dict)
    summary: list[str] = field(default_factory=list)  # one-line findings printed at the end of the run


@dataclass
class Experiment:
    name: str
    group: str
    order: int
    module: ModuleType

    @property
    def tables(self) -> tuple[str, ...]:
        return tuple(getattr(self.module, "TABLES", ()))

    def run(self, ctx: "RunContext") -> Result:
        result = self.module.run(ctx)
        undeclared = sorted(set(result.tables) - set(self.tables))
        if undeclared:
            raise RuntimeError(f"{self.name} returned rows for {', '.join(undeclared)}, which its TABLES "
                               "does not name")
        return result


def registry() -> list[Experiment]:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name.startswith("_"):
            continue
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if not hasattr(mod, "NAME") or not hasattr(mod, "run"):
            continue
        found.append(Experiment(mod.NAME, mod.GROUP, getattr(mod, "ORDER", 50), mod))
    return sorted(found, key=lambda e: (list(GROUPS).index(e.group), e.order, e.name))


@dataclass
class RunContext:
    run_id: int
    device: object            # torch.device
    dtype: object             # torch.dtype
    loaded: object            # runner.models.LoadedModel
    quick: bool = False
    seed: int = 0
    progress: Callable[[str], None] = lambda msg: None
    # Values one experiment publishes for later ones (e.g. the measured copy roof, bytes/token).
    shared: dict = field(default_factory=dict)
    # Injected in tests: a callable returning allocated bytes (defaults to the CUDA allocator).
    memory_probe: Callable[[], int] | None = None
    # Injected in tests: the last-level cache in bytes (defaults to the device's, probes.last_level_cache_bytes),
    # which sizes every cache flush and decides which sizes are DRAM-sized.
    llc_bytes: int | None = None

    @property
    def llc(self) -> int:
        from ..probes import last_level_cache_bytes

        if self.llc_bytes is None:
            self.llc_bytes = last_level_cache_bytes(self.device)
        return self.llc_bytes

    @property
    def model(self):
        return self.loaded.model

    @property
    def config(self):
        return self.loaded.config

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def dtype_bytes(self) -> int:
        return torch.tensor([], dtype=self.dtype).element_size()

    @property
    def max_positions(self) -> int:
        c = self.config
        for name in ("n_positions", "max_position_embeddings"):
            if getattr(c, name, None):
                return int(getattr(c, name))
        return 2048

    @property
    def vocab_size(self) -> int:
        return int(self.config.vocab_size)

    def input_ids(self, batch: int, seq_len: int):
        """Random token ids (values do not change cache size or timing), reproducible per shape."""
        g = torch.Generator().manual_seed(self.seed * 1_000_003 + batch * 10_007 + seq_len)
        return torch.randint(0, self.vocab_size, (batch, seq_len), generator=g).to(self.device)

    def fits(self, seq_len: int) -> bool:
        return seq_len <= self.max_positions
