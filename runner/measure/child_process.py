"""Run a scenario module in a fresh Python process and read its one-line JSON result.

Used where a measurement needs a process of its own: an allocator setting read once at CUDA start
(runner/measure/frag_child.py), or a deliberate out-of-memory the parent must survive (runner/measure/oom_child.py).
The child imports this checkout (PYTHONPATH), gets `spec` as its one JSON argument, prints one JSON object
last on stdout, and reports failures on stderr with a non-zero exit code.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import torch


class ChildError(RuntimeError):
    pass


def child_cuda_device(spec: dict, who: str):
    """In a child: the CUDA device `spec['device']` names, made current; exit 3 (with why) without one."""
    device = torch.device(spec["device"])
    if device.type != "cuda" or not torch.cuda.is_available():
        print(f"{who}: needs a CUDA device, got {spec['device']!r}", file=sys.stderr)
        sys.exit(3)
    torch.cuda.set_device(device)
    return device


def run_json_child(module: str, spec: dict, label: str, timeout_s: int, env: dict | None = None,
                   error=ChildError) -> dict:
    """`python -m module 'spec'` with `env` (default: this process's); its JSON result, or `error`
    naming `label` and the child's last error line."""
    env = dict(os.environ if env is None else env)
    # The parent's import path, so the child imports the same kvreport (an editable install, or a
    # checkout made importable by PYTHONPATH as scripts/gpu_reference.sh does).
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    try:
        proc = subprocess.run([sys.executable, "-m", module, json.dumps(spec)], env=env, capture_output=True,
                              text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        raise error(f"{label}: scenario child timed out after {timeout_s}s") from None
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.strip().splitlines() if ln.strip()]
        raise error(f"{label}: scenario child exited {proc.returncode}: {lines[-1] if lines else 'no message'}")
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise error(f"{label}: scenario child printed no JSON result") from None


def child_main(name: str, scenario, argv: list[str]) -> int:
    """The child's side: parse the one JSON argument, run `scenario(spec)`, print its JSON result; errors
    go to stderr as one line the parent reports (exit 2: bad argument, 1: the scenario failed)."""
    try:
        spec = json.loads(argv[1])
    except (IndexError, json.JSONDecodeError) as exc:
        print(f"{name}: expected one JSON argument ({exc})", file=sys.stderr)
        return 2
    try:
        out = scenario(spec)
    except Exception as exc:  # noqa: BLE001 - the parent records the message as the failure reason
        print(f"{name}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(out))
    return 0
