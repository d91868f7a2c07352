"""What machine produced a result: stored beside every run so a number can be judged by its hardware."""
from __future__ import annotations

import json
import os
import platform
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import torch
import transformers

from .. import __version__
from .probes import host_total_bytes, nvml_driver_version


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def installed_commit(read_direct_url=None) -> str | None:
    """The commit pip recorded when kvreport was installed from a git URL (PEP 610: direct_url.json's
    vcs_info.commit_id in the installed package's metadata); None for any other install. `read_direct_url`
    returns that file's text (tests pass one)."""
    if read_direct_url is None:
        def read_direct_url():
            from importlib.metadata import PackageNotFoundError, distribution
            try:
                return distribution("kvreport").read_text("direct_url.json")
            except PackageNotFoundError:
                return None
    try:
        info = json.loads(read_direct_url() or "{}")
    except (OSError, ValueError):
        return None
    commit = (info.get("vcs_info") or {}).get("commit_id") if isinstance(info, dict) else None
    return str(commit) if commit else None


def built_commit() -> str | None:
    """The commit the installed package was built from: setup.py's build step writes it into
    kvreport/runner/_build_commit.py (a plain `pip install .` from a git checkout); None where that module is
    absent (running from the checkout) or says None (built without git)."""
    try:
        from .. import _build_commit  # generated at build time, never in the checkout
    except ImportError:
        return None
    commit = getattr(_build_commit, "COMMIT", None)
    return str(commit) if commit else None


def kvreport_commit() -> str | None:
    """The git commit of the kvreport checkout running now (`<sha>+dirty` with local changes), else the
    commit the installed package was built from (built_commit), else the commit an install from a git URL
    recorded (installed_commit); None otherwise. It is what "the exact code that measured this" means on a
    machine card."""
    return _checkout_commit() or built_commit() or installed_commit()


def _checkout_commit() -> str | None:
    here = Path(__file__).resolve().parent
    try:
        top = subprocess.run(["git", "-C", str(here), "rev-parse", "--show-toplevel"], capture_output=True,
                             text=True, timeout=5)
        if top.returncode != 0 or Path(top.stdout.strip()).resolve() != here.parents[1]:
            return None  # not our own checkout (e.g. installed inside some other repository's venv)
        sha = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return (sha + ("+dirty" if dirty else "")) or None


def collect(device) -> dict:
    info = {
        "device_kind": device.type,
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "python_version": platform.python_version(),
        "kvreport_version": __version__,
        "os": f"{platform.system()} {platform.release()}",
        "cpu": _cpu_name(),
        "cpu_count": os.cpu_count(),
        "host_memory_bytes": host_total_bytes(),
        "host": socket.gethostname(),
        # shlex-quoted, so the machine card's "reproduce" command can be pasted back into a shell.
        "command_line": shlex.join(["kvreport", *sys.argv[1:]]),
        "kvreport_commit": kvreport_commit(),
        "gpu_name": None, "gpu_memory_bytes": None, "gpu_count": 0,
        "driver_version": None, "cuda_version": None,
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info.update({
            "device_name": props.name,
            "gpu_name": props.name,
            "gpu_memory_bytes": int(props.total_memory),
            "gpu_count": torch.cuda.device_count(),
            "cuda_version": torch.version.cuda,
            "driver_version": nvml_driver_version(),
        })
    else:
        info["device_name"] = info["cpu"]
    return info
