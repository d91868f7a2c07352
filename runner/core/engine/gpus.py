"""Common GPUs' memory as the device reports it (nvidia-smi memory.total, MiB), not the marketing GB.

Each figure was read in public nvidia-smi output held by the code search (find_string on the MiB figure;
the file ids are given so the excerpt can be re-read with read_file). vLLM sizes its budget from the
CUDA-reported total (torch.cuda.mem_get_info), which nvidia-smi prints as memory.total.
"""
from __future__ import annotations

from .vllm_rules import EngineError

MIB = 2**20
GIB = 2**30

# name -> (MiB, where it was read)
GPUS: dict[str, tuple[int, str]] = {
    "rtx3090": (24_576, "NVIDIA GeForce RTX 3090: '23 644 MiB / 24 576 MiB' (code search file id 53817746208)"),
    "l40s": (46_068, "NVIDIA L40S: '0MiB / 46068MiB' (code search file id 53425348813)"),
    "a100-80gb": (81_920, "NVIDIA A100-SXM4-80GB: '1MiB / 81920MiB' (code search file id 2867190445)"),
    "h100": (81_559, "NVIDIA H100 80GB HBM3: '1MiB / 81559MiB' (code search file id 8134165308)"),
    "h200": (143_771, "NVIDIA H200: '0MiB / 143771MiB' (code search file id 6737105653)"),
}
DEFAULT_GPUS = ("h100", "h200", "rtx3090")


def gpu_bytes(name: str) -> int:
    key = name.strip().lower()
    if key not in GPUS:
        raise EngineError(f"--gpu {name}: expected one of {', '.join(GPUS)} (or give --gpu-memory in GiB)")
    return GPUS[key][0] * MIB


def parse_size(text: str, option: str) -> int:
    """'3.81GiB', '80GB', '24576MiB', '2TiB', '80' (GiB) -> bytes; anything else is an EngineError naming `option`."""
    t = text.strip().replace(" ", "")
    units = (("tib", 2**40), ("gib", GIB), ("mib", MIB), ("tb", 10**12), ("gb", 10**9), ("mb", 10**6), ("g", GIB),
             ("", GIB))
    for suffix, scale in units:
        if t.lower().endswith(suffix):
            number = t[:len(t) - len(suffix)] if suffix else t
            try:
                value = float(number)
            except ValueError:
                break
            if value > 0 and value == value and value != float("inf"):
                return int(value * scale)
            break
    raise EngineError(f"{option} {text}: expected a size such as 3.81GiB, 80GB, 24576MiB or 2TiB")
