"""Decode steps in three modes, shared by the decode and interference experiments.

- eager:  transformers' DynamicCache, as the seed measured. Each step appends with torch.cat, so besides
          the attention's reads the layout re-reads the whole prefix and writes it again (`recopy_bytes`).
- static: a preallocated StaticCache sized to exactly the tokens the steps need; each step writes its
          token in place (index_copy_) and the attention reads the whole preallocated length. No graph, so
          it runs on the CPU too: it separates the cache layout's cost from launch overhead.
- graph:  the static steps captured once in a CUDA graph and replayed: one launch for the whole step
          (CUDA only; elsewhere `ModeUnavailable` carries the reason, recorded as skipped).

Every decoder runs `steps` steps of `batch` sequences on a prefilled `prefix` per call, and `reset()`
brings the cache back to the prefix (untimed), so every call does the same work (`logits` holds the last step's output, for checks):
- eager: DynamicCache.crop with a negative count (the spelling every release accepts), or a deep copy of
  the prefilled cache where crop is missing or misbehaves;
- static/graph: StaticCache.crop(-extra) in transformers 5.x moves its device-side length counter back
  (the stale entries are overwritten next time and masked meanwhile); releases whose forward takes
  `cache_position` get fixed positions instead, and need no reset.
"""
from __future__ import annotations

import copy
import inspect

import torch

from .kv_cache import _cache_kwarg, cache_bytes, cache_seq_len, forward_with_cache

MODES = ("eager", "static", "graph")


class ModeUnavailable(Exception):
    """This decode mode cannot run here; the message is the recorded reason."""


class Restorer:
    """Brings a DynamicCache back to its prefilled length between timed calls."""

    def __init__(self, cache, prefix_len: int):
        self.prefix_len = prefix_len
        self.cache = cache
        self.method = "crop"
        self._pristine = None

    def use_copies(self):
        self.method = "deepcopy"
        self._pristine = copy.deepcopy(self.cache)

    def restore(self):
        if self.method == "deepcopy":
            self.cache = copy.deepcopy(self._pristine)
            return
        extra = cache_seq_len(self.cache) - self.prefix_len
        if extra > 0:
            self.cache.crop(-extra)  # negative = tokens to remove: the one spelling every release accepts
        if cache_seq_len(self.cache) != self.prefix_len:
            raise RuntimeError(f"crop left {cache_seq_len(self.cache)} tokens, expected {self.prefix_len}")


class EagerDecoder:
    mode = "eager"

    def __init__(self, model, prefix_ids, step_ids, steps: int = 1):
        self.model, self.step_ids, self.steps = model, step_ids, steps
        self.prefix = prefix_ids.shape[1]
        _, cache = forward_with_cache(model, prefix_ids)
        self.kv_bytes = cache_bytes(cache)  # the prefix's cache as the tensors hold it
        self.rest = Restorer(cache, self.prefix)
        if not hasattr(cache, "crop"):  # legacy tuple caches are immutable: reusing the tuple is a restore
            self.rest.use_copies()
        # Growth of one step, from the tensors themselves (untimed).
        _, grown = forward_with_cache(model, step_ids, self.rest.cache)
        self.growth_bytes = cache_bytes(grown) - self.kv_bytes
        del grown
        if self.rest.method == "crop":
            try:
                self.rest.restore()
            except Exception:  # noqa: BLE001 - a cache class without a working negative crop: copy instead
                _, self.rest.cache = forward_with_cache(model, prefix_ids)
                self.rest.use_copies()

    @property
    def restore_method(self) -> str:
        return self.rest.method

    def __call__(self) -> None:
        cache = self.rest.cache
        for _ in range(self.steps):
            self.logits, cache = forward_with_cache(self.model, self.step_ids, cache)
        self.rest.cache = cache

    def reset(self) -> None:
        self.rest.restore()

    def recopy_bytes(self) -> int:
        """torch.cat per step reads the whole cache so far and writes it one token longer."""
        per_token = self.growth_bytes
        return sum(self.kv_bytes + i * per_token + self.kv_bytes + (i + 1) * per_token for i in range(self.steps))

    def kv_read_bytes(self) -> int:
        """Attention reads every cached token, the new one included, at every step."""
        return sum(self.kv_bytes + (i + 1) * self.growth_bytes for i in range(self.steps))


def _static_cache(model, batch: int, max_len: int, device, dtype):
    """A StaticCache for `max_len` tokens, whatever the installed release calls its arguments."""
    try:
        from transformers import StaticCache
    except ImportError:
        raise ModeUnavailable("this transformers release has no StaticCache") from None
    params = inspect.signature(StaticCache.__init__).parameters
    kwargs = {"config": model.config, "max_cache_len": max_len}
    for name, value in (("max_batch_size", batch), ("batch_size", batch), ("device", device), ("dtype", dtype)):
        if name in params:
            kwargs[name] = value
    if "max_batch_size" in kwargs and "batch_size" in kwargs:
        del kwargs["batch_size"]
    try:
        return StaticCache(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ModeUnavailable(f"StaticCache({', '.join(kwargs)}): {exc}") from None


class StaticDecoder:
    mode = "static"

    def __init__(self, model, prefix_ids, step_ids, steps: int = 1):
        self.model, self.step_ids, self.steps = model, step_ids, steps
        self.prefix = prefix_ids.shape[1]
        batch, device = prefix_ids.shape[0], prefix_ids.device
        dtype = next(model.parameters()).dtype
        self.max_len = self.prefix + steps  # exactly what the steps need: no padded reads
        self.cache = _static_cache(model, batch, self.max_len, device, dtype)
        self._explicit = "cache_position" in inspect.signature(model.forward).parameters
        self._kw = _cache_kwarg(model)
        try:
            self._forward(prefix_ids, torch.arange(self.prefix, device=device))
        except Exception as exc:  # noqa: BLE001 - an architecture this release cannot run on a static cache
            raise ModeUnavailable(f"prefill on a StaticCache failed: {type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        self._positions = [torch.tensor([self.prefix + i], device=device) for i in range(steps)]
        self.buffer_bytes = cache_bytes(self.cache)  # the preallocated K and V of every layer
        self.kv_bytes = self.buffer_bytes * self.prefix // self.max_len
        self.growth_bytes = self.buffer_bytes // self.max_len

    def _forward(self, ids, positions):
        kwargs = {"use_cache": True, self._kw: self.cache}
        if self._explicit:
            kwargs["cache_position"] = positions
        return self.model(ids, **kwargs).logits

    def __call__(self) -> None:
        for i in range(self.steps):
            self.logits = self._forward(self.step_ids, self._positions[i])

    def reset(self) -> None:
        if self._explicit:
            return
        extra = int(self.cache.get_seq_length()) - self.prefix  # a host read, outside the timed call
        if extra > 0:
            self.cache.crop(-extra)

    restore_method = "static"

    def recopy_bytes(self) -> int:
        return 0

    def kv_read_bytes(self) -> int:
        """The attention reads the whole preallocated buffer at every step (masked beyond the position)."""
        return self.steps * self.buffer_bytes


class GraphDecoder(StaticDecoder):
    """The static steps captured in one CUDA graph; a call is one replay."""
    mode = "graph"

    def __init__(self, model, prefix_ids, step_ids, steps: int = 1):
        if prefix_ids.device.type != "cuda":
            raise ModeUnavailable("CUDA graphs need a CUDA device; this run has none")
        super().__init__(model, prefix_ids, step_ids, steps)
        side = torch.cuda.Stream(prefix_ids.device)
        side.wait_stream(torch.cuda.current_stream(prefix_ids.device))
        with torch.cuda.stream(side):  # warm-up off the default stream, as capture requires
            for _ in range(2):
                super().__call__()
                self.reset()
        torch.cuda.current_stream(prefix_ids.device).wait_stream(side)
        torch.cuda.synchronize(prefix_ids.device)
        self.graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(self.graph):
                super().__call__()  # recorded, not run: the cache's length counter did not move
        except Exception as exc:  # noqa: BLE001 - a host sync inside the step, an unsupported op, ...
            raise ModeUnavailable(f"CUDA graph capture of the static step failed: {type(exc).__name__}: "
                                  f"{str(exc).splitlines()[0] if str(exc) else ''}") from None

    def __call__(self) -> None:
        self.graph.replay()


DECODERS = {"eager": EagerDecoder, "static": StaticDecoder, "graph": GraphDecoder}


def make_decoder(mode: str, model, prefix_ids, step_ids, steps: int = 1):
    """A prefilled decoder of `mode`, or ModeUnavailable with the reason it cannot run here."""
    return DECODERS[mode](model, prefix_ids, step_ids, steps)


def host_syncs(fn) -> list[str]:
    """The host-synchronising ops (tensor -> Python scalar, nonzero) one call of fn performs. A step that
    does none can be captured in a CUDA graph; this is how the CPU checks the static step for it.
    Call it outside torch.inference_mode: inference tensors bypass the dispatch mode that watches."""
    from torch.utils._python_dispatch import TorchDispatchMode

    sync_ops = {torch.ops.aten._local_scalar_dense.default, torch.ops.aten.nonzero.default}

    class Watch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in sync_ops:
                self.seen.append(str(func))
            return func(*args, **(kwargs or {}))

    with Watch() as watch:
        fn()
    return watch.seen
