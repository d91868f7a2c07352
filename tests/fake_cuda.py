"""Shared by test_decode and test_interference: a fake torch.cuda for the graph decoder on the CPU, and the
failures it and the static cache's rewind can inject. The decoders take these as arguments (`cuda=`,
`rewind=`), the experiments a `make_decoder`: nothing in runner/ is patched. Not a test module."""
from __future__ import annotations

import contextlib

from kvreport.runner.measure import decode_step


class InjectedFailure(RuntimeError):
    pass


class FakeCuda:
    """The part of torch.cuda the graph decoder drives, on the CPU: streams and captures are no-ops (a
    'captured' step simply runs, with `capturing` set), and `fail_at` makes one phase raise: "warm-up"
    (entering the side stream), "capture" (ending the capture, as a host sync inside it would), "replay",
    or "sync" (an asynchronous error surfacing at the first synchronise)."""

    def __init__(self, fail_at: str | None = None):
        self.fail_at = fail_at
        self.calls: list[str] = []
        self.capturing = False
        fake = self

        class Stream:
            def __init__(self, device=None):
                fake.calls.append("Stream")

            def wait_stream(self, other):
                pass

        class CUDAGraph:
            def replay(self):
                fake.calls.append("replay")
                if fake.fail_at == "replay":
                    raise InjectedFailure("injected replay failure")

        self.Stream, self.CUDAGraph = Stream, CUDAGraph

    def current_stream(self, device=None):
        return self.Stream(device)

    @contextlib.contextmanager
    def stream(self, s):
        self.calls.append("stream")
        if self.fail_at == "warm-up":
            raise InjectedFailure("injected warm-up failure")
        yield

    @contextlib.contextmanager
    def graph(self, g):
        self.calls.append("capture")
        self.capturing = True
        try:
            yield
        finally:
            self.capturing = False
        if self.fail_at == "capture":
            raise InjectedFailure("operation not permitted when stream is capturing (injected)")

    def synchronize(self, device=None):
        self.calls.append("synchronize")
        if self.fail_at == "sync":
            raise InjectedFailure("an illegal memory access was encountered (injected)")


def failing_rewind(n: int, error: Exception | None = None):
    """The static cache's rewind, raising `error` (an InjectedFailure by default) on its n-th call
    (1 = the graph decoder's reset inside its warm-up, or a static decoder's first reset)."""
    count = [0]

    def rewind(cache, length):
        count[0] += 1
        if count[0] == n:
            raise error or InjectedFailure("injected reset failure")
        decode_step.rewind_static_cache(cache, length)

    return rewind


def decoders(**options_by_mode):
    """A make_decoder for the experiments that hands `options_by_mode[mode]` to that mode's decoders, e.g.
    graph={"cuda": FakeCuda("capture")} or static={"rewind": failing_rewind(1)}; other modes as in a run."""
    def make(mode, *args, **options):
        return decode_step.make_decoder(mode, *args, **options, **options_by_mode.get(mode, {}))

    return make
