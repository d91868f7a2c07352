"""Units, constants and the error every part of the model facts shares."""
from __future__ import annotations

from ..errors import UserError

DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2, "float8": 1}
BLOCK_TOKENS = 16  # vLLM's default block size
VLLM_RULES = ("vLLM v1 KV cache specs, vllm-project/vllm commit 001cabc1be16a59a70d720ed61a13b678c060a18 "
              "(vllm/v1/kv_cache_interface.py, vllm/v1/core/single_type_kv_cache_manager.py)")
GPU_SIZES_GB = (24, 80, 141, 192)
TP_SIZES = (1, 2, 4, 8)
GPU_MEMORY_UTILIZATION = 0.9  # vLLM's default share of GPU memory it plans with
KINDS = ("full", "sliding", "chunked", "mla_latent", "mla_per_head", "linear_state", "mamba_state", "conv_state",
         "rwkv_state", "none")


class ModelFactsError(UserError):
    """A config that cannot be described: the message names the file and the field."""


def dtype_bytes(dtype: str) -> int:
    try:
        return DTYPE_BYTES[dtype]
    except KeyError:
        raise ModelFactsError(f"dtype {dtype!r}: expected one of {', '.join(DTYPE_BYTES)}") from None


def cdiv(a: int, b: int) -> int:
    return -(-a // b)

