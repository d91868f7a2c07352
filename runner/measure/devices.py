"""Device and dtype resolution, and the small amount of code that differs between CUDA and CPU."""
from __future__ import annotations

import torch

from ..core.errors import UserError


class DeviceError(UserError):
    pass


def resolve_device(spec: str):
    spec = (spec or "auto").lower()
    if spec == "auto":
        return torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    if spec == "cpu":
        return torch.device("cpu")
    if spec.startswith("cuda"):
        if not torch.cuda.is_available():
            raise DeviceError(f"--device {spec}: no CUDA GPU is visible to torch "
                              f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); "
                              "use --device cpu or --device auto")
        dev = torch.device(spec if ":" in spec else "cuda:0")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise DeviceError(f"--device {spec}: only {torch.cuda.device_count()} CUDA device(s) visible")
        return dev
    raise DeviceError(f"--device {spec}: expected auto, cpu, cuda or cuda:N")


def resolve_dtype(spec: str, device, model_name: str = ""):
    """`auto`: 16-bit on a GPU (bfloat16 for the Llama/Mistral/Qwen families, which ship in it; float16
    for GPT-2, as in the profiler write-up), float32 on the CPU, where half-precision matmuls are slow."""
    table = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
    spec = (spec or "auto").lower()
    if spec in table:
        return table[spec]
    if spec != "auto":
        raise DeviceError(f"--dtype {spec}: expected auto, float16, bfloat16 or float32")
    if device.type == "cuda":
        return torch.float16 if model_name.startswith(("gpt2", "tiny-gpt2")) else torch.bfloat16
    return torch.float32


def dtype_name(dtype) -> str:
    return str(dtype).replace("torch.", "")


def synchronize(device) -> None:
    if getattr(device, "type", str(device)).startswith("cuda"):
        torch.cuda.synchronize(device)


