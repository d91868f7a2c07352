"""Decode steps in three modes (eager DynamicCache, static StaticCache, a CUDA graph replay), shared by the
decode and interference experiments. `make_decoder(mode, model, prefix_ids, step_ids, steps)` returns a
decoder whose call runs the steps and whose `reset()` brings the cache back to the prefix, untimed; a mode that
cannot run here raises ModeUnavailable with the reason. The StaticCache factory, rewind and CUDA API are
parameters (production defaults), so tests hand in failing ones. Method: docs/methods/decode.md."""
from __future__ import annotations

import copy
import inspect

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from transformers import StaticCache, cache_utils

from ..core.errors import describe_exception as describe
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


def static_cache(model, batch: int, max_len: int, device, dtype):
    """A StaticCache for `max_len` tokens, whatever the installed release calls its arguments."""
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


def _static_layer_classes() -> tuple[tuple[type, ...], tuple[type, ...]]:
    """(layer classes whose length counters rewind_static_cache knows, the sliding-window ones among them).
    Exact classes, not subclasses: a subclass may keep more state (recurrent states, an indexer) than the
    counters rewound here, and rewinding half of it would time a step on a corrupt cache."""
    known = tuple(getattr(cache_utils, n) for n in ("StaticLayer", "StaticSlidingWindowLayer")
                  if hasattr(cache_utils, n))
    sliding = tuple(c for c in known if c.__name__ == "StaticSlidingWindowLayer")
    return known, sliding


def check_rewindable(cache, total_len: int) -> None:
    """ModeUnavailable unless every layer of this StaticCache can be put back to an earlier length:
    a layer type with state this module does not know, or a sliding window shorter than the tokens the
    steps reach (the window would roll, and the tokens it evicted cannot be brought back)."""
    layers = getattr(cache, "layers", None)
    if not layers:
        raise ModeUnavailable(f"{type(cache).__name__} has no per-layer state (transformers < 5?)")
    known, sliding = _static_layer_classes()
    for i, layer in enumerate(layers):
        if type(layer) not in known:
            raise ModeUnavailable(f"layer {i} of the static cache is a {type(layer).__name__}: no known way to "
                                  "rewind it between timed calls")
        if isinstance(layer, sliding) and layer.max_cache_len < total_len:
            raise ModeUnavailable(f"layer {i} keeps a {layer.max_cache_len}-token sliding window, shorter than the "
                                  f"{total_len} tokens the steps reach: a rolled window cannot be rewound")


def rewind_static_cache(cache, length: int) -> None:
    """Put every layer of a StaticCache back to `length` cached tokens, in place (a CUDA graph holds the
    counters' addresses). Works the same on every supported release: transformers 5.17-5.23 have no
    StaticLayer.crop, and 5.24's crop subtracts from each counter, which goes wrong after a graph capture
    (the capture advances a sliding layer's Python-side count but not its device-side one). So each
    counter is set to the absolute length: the device-side `cumulative_length` by fill_ (no host read), a
    sliding layer's Python `cumulative_length_int` by assignment. The stale entries past `length` are
    overwritten by the next step before any attention reads them (the causal mask hides them until then).
    Then every layer's length is read back (a host sync, outside the timed call)."""
    for layer in cache.layers:
        if not getattr(layer, "is_initialized", False):
            continue
        layer.cumulative_length.fill_(length)
        if hasattr(layer, "cumulative_length_int"):
            layer.cumulative_length_int = length
    got = sorted({int(layer.get_seq_length()) for layer in cache.layers if getattr(layer, "is_initialized", False)})
    if got != [length]:
        raise RuntimeError(f"rewinding the static cache left lengths {got}, expected {length}")


class StaticDecoder:
    """`make_cache(model, batch, max_len, device, dtype)` builds the StaticCache and `rewind(cache, length)`
    puts it back to the prefix between calls (defaults: static_cache, rewind_static_cache)."""
    mode = "static"

    def __init__(self, model, prefix_ids, step_ids, steps: int = 1, *, make_cache=static_cache,
                 rewind=rewind_static_cache):
        self.model, self.step_ids, self.steps = model, step_ids, steps
        self._rewind = rewind
        self.prefix = prefix_ids.shape[1]
        batch, device = prefix_ids.shape[0], prefix_ids.device
        dtype = next(model.parameters()).dtype
        self.max_len = self.prefix + steps  # exactly what the steps need: no padded reads
        self.cache = make_cache(model, batch, self.max_len, device, dtype)
        check_rewindable(self.cache, self.max_len)
        self._kw = _cache_kwarg(model)
        try:
            self._forward(prefix_ids)
        except Exception as exc:  # noqa: BLE001 - an architecture this release cannot run on a static cache
            raise ModeUnavailable(f"prefill on a StaticCache failed: {describe(exc)}") from None
        self.buffer_bytes = cache_bytes(self.cache)  # the preallocated K and V of every layer
        self.kv_bytes = self.buffer_bytes * self.prefix // self.max_len
        self.growth_bytes = self.buffer_bytes // self.max_len

    def _forward(self, ids):
        return self.model(ids, use_cache=True, **{self._kw: self.cache}).logits

    def __call__(self) -> None:
        for _ in range(self.steps):
            self.logits = self._forward(self.step_ids)

    def reset(self) -> None:
        self._rewind(self.cache, self.prefix)

    restore_method = "static"

    def recopy_bytes(self) -> int:
        return 0

    def kv_read_bytes(self) -> int:
        """The attention reads the whole preallocated buffer at every step (masked beyond the position)."""
        return self.steps * self.buffer_bytes


def graph_unavailable(device) -> str | None:
    """Why CUDA graphs cannot run on `device`, or None."""
    if device.type != "cuda":
        return "CUDA graphs need a CUDA device; this run has none"
    return None


# A replay must reproduce the static step it captured: max |difference| of the logits within this share
# of their largest magnitude (the same kernels run, so it is far closer in practice).
GRAPH_CHECK_RTOL = 1e-2


class GraphDecoder(StaticDecoder):
    """The static steps captured in one CUDA graph; a call is one replay.

    Everything after the static prefill runs under one guard, phase by phase: the side-stream warm-up
    (two static calls, each followed by a reset), capture, a reset, one checked replay and a final reset,
    each phase ending in a synchronise so that an asynchronous CUDA error surfaces inside the phase that
    caused it. Any failure becomes ModeUnavailable naming the phase and the exception's type and message:
    the experiment records it as this mode's skip, and the other modes keep their rows.

    `cuda` is the CUDA API it drives: None for torch.cuda, on a CUDA device only. A caller that passes its
    own (the CPU tests' fake, which injects a failure into one phase) vouches for the device itself.
    `static_options` go to StaticDecoder (the cache factory, the rewind)."""
    mode = "graph"

    def __init__(self, model, prefix_ids, step_ids, steps: int = 1, *, cuda=None, **static_options):
        if cuda is None:
            why = graph_unavailable(prefix_ids.device)
            if why:
                raise ModeUnavailable(why)
            cuda = torch.cuda
        super().__init__(model, prefix_ids, step_ids, steps, **static_options)
        device = prefix_ids.device
        phase = "warm-up"
        try:
            side = cuda.Stream(device)
            side.wait_stream(cuda.current_stream(device))
            with cuda.stream(side):  # warm-up off the default stream, as capture requires
                for _ in range(2):
                    phase = "warm-up"
                    StaticDecoder.__call__(self)
                    phase = "reset"
                    self.reset()
            phase = "warm-up"
            cuda.current_stream(device).wait_stream(side)
            cuda.synchronize(device)
            expected = self.logits.clone()  # the last warm-up call: the same positions a replay computes
            phase = "capture"
            self.graph = cuda.CUDAGraph()
            with cuda.graph(self.graph):
                StaticDecoder.__call__(self)  # recorded, not run (Python-side counters did move)
            cuda.synchronize(device)
            phase = "reset"
            self.reset()
            phase = "replay"
            self.graph.replay()
            cuda.synchronize(device)
            self._check_replay(expected)
            phase = "reset"
            self.reset()
            cuda.synchronize(device)
        except Exception as exc:  # noqa: BLE001 - a host sync in the step, an unsupported op, an async error
            raise ModeUnavailable(f"CUDA graph {phase} failed: {describe(exc)}") from None

    def _check_replay(self, expected) -> None:
        diff = float((self.logits.float() - expected.float()).abs().max())
        scale = float(expected.float().abs().max())
        if not diff <= GRAPH_CHECK_RTOL * max(scale, 1e-6):  # `not <=`: a NaN difference fails too
            raise RuntimeError(f"the replayed step differs from the static step by {diff:.3g} (logits up to "
                               f"{scale:.3g})")

    def __call__(self) -> None:
        self.graph.replay()


DECODERS = {"eager": EagerDecoder, "static": StaticDecoder, "graph": GraphDecoder}


def make_decoder(mode: str, model, prefix_ids, step_ids, steps: int = 1, **options):
    """A prefilled decoder of `mode`, or ModeUnavailable with the reason it cannot run here. `options` go to
    the decoder's class (static and graph: make_cache, rewind; graph: cuda)."""
    return DECODERS[mode](model, prefix_ids, step_ids, steps, **options)


# Ops that make the host wait for the device: a tensor turned into a Python value, or an output whose size
# depends on the data. Any of them in a step breaks CUDA graph capture and stalls an eager launch queue.
HOST_SYNC_OPS = ("_local_scalar_dense.default", "nonzero.default", "is_nonzero.default", "equal.default",
                 "masked_select.default", "_unique2.default", "unique_consecutive.default",
                 "repeat_interleave.Tensor")


def host_syncs(fn) -> list[str]:
    """What one call of fn does that a CUDA graph cannot hold, checked on any device (the meta device
    included, where a model of any size costs no memory): host-synchronising ops (HOST_SYNC_OPS), and
    device work that takes a CPU tensor in or hands one back (a host<->device copy, or a CPU value mixed
    into a kernel). Empty for a step that can be captured. Call it outside torch.inference_mode:
    inference tensors bypass the dispatch mode that watches."""
    sync_ops = {op for name in HOST_SYNC_OPS
                for op in [getattr(getattr(torch.ops.aten, name.split(".")[0], None), name.split(".")[1], None)]
                if op is not None}

    class Watch(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.seen: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            ins = {t.device.type for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)}
            if func in sync_ops:
                self.seen.append(f"host sync: {func}")
            elif "cpu" in ins and ins != {"cpu"}:  # checked before the call: a mixed call may raise
                self.seen.append(f"CPU tensor in device work: {func}")
            elif kwargs.get("device") is not None and ins and torch.device(kwargs["device"]).type not in ins:
                to = torch.device(kwargs["device"]).type  # a copy to another device (.cpu(), .to(...))
                what = "device work handed back to the CPU" if to == "cpu" else "CPU tensor copied into device work"
                self.seen.append(f"{what}: {func}")
                ins = set()  # reported; not again below
            out = func(*args, **kwargs)
            outs = {t.device.type for t in tree_leaves(out) if isinstance(t, torch.Tensor)}
            if ins and "cpu" not in ins and "cpu" in outs:
                self.seen.append(f"device work handed back to the CPU: {func}")
            elif ins == {"cpu"} and outs - {"cpu"}:
                self.seen.append(f"CPU tensor copied into device work: {func}")
            return out

    with Watch() as watch:
        try:
            fn()
        except Exception as exc:  # a meta tensor has no value to read: the sync is recorded, then it raises
            if not watch.seen:
                raise
            watch.seen.append(f"(the call then raised {describe(exc)})")
    return watch.seen
