"""One module per family whose cache needs rules beyond the generic reading; the table maps model_type to
the function that reads it."""
from __future__ import annotations

from .cpmant import cpmant
from .dbrx import dbrx
from .deepseek import deepseek
from .deepseek_v4 import deepseek_v4
from .dory import dory
from .encoder import ENCODER_ONLY, encoder_only
from .falcon import falcon
from .gemma import gemma3_text, gemma4_text
from .gpt2 import gpt2
from .gpt_bigcode import gpt_bigcode
from .gpt_neo import gpt_neo
from .gpt_oss import gpt_oss
from .inkling import inkling
from .jamba import jamba
from .kimi_linear import kimi_delta_hybrid
from .kolibri import kolibri
from .llama import llama_like
from .llama4 import llama4_text
from .longcat import longcat_flash
from .mamba import mamba, mamba2
from .mamba2_hybrid import mamba2_hybrid
from .mimo import mimo_v2_flash
from .minimax import minimax
from .mllama import mllama_text
from .nemotron_h import nemotron_h
from .prophetnet import prophetnet
from .qwen3_next import qwen3_next
from .qwen4_exp import qwen4_exp_text
from .reformer import reformer
from .rwkv import rwkv
from .xlstm import xlstm
from .zamba import zamba
from .zaya import zaya

FAMILIES = {
    "gpt2": gpt2, "llama": llama_like, "mistral": llama_like, "qwen2": llama_like, "qwen3": llama_like,
    "qwen3_moe": llama_like, "phi3": llama_like, "falcon": falcon, "gemma3_text": gemma3_text,
    "gpt_oss": gpt_oss, "llama4_text": llama4_text, "deepseek_v2": deepseek, "deepseek_v3": deepseek,
    "kimi_k2": deepseek, "deepseek_v32": deepseek, "glm_moe_dsa": deepseek, "qwen3_next": qwen3_next,
    "jamba": jamba, "nemotron_h": nemotron_h, "gemma4_text": gemma4_text, "mimo_v2_flash": mimo_v2_flash,
    "mixtral": llama_like, "minimax_m2": llama_like, "qwen3_5_text": qwen3_next, "qwen3_5_moe_text": qwen3_next,
    "mamba": mamba, "falcon_mamba": mamba, "mamba2": mamba2, "gpt_bigcode": gpt_bigcode, "gpt_neo": gpt_neo,
    "mllama_text_model": mllama_text, "minimax": minimax, "longcat_flash": longcat_flash, "rwkv": rwkv,
    "zamba": zamba, "cpmant": cpmant, "zamba2": zamba,
    "xlstm": xlstm, "dbrx": dbrx, "deepseek_v4": deepseek_v4,
    "inkling_text": inkling, "inkling2_text": inkling, "inkling2_loop_text": inkling,
    "qwen4_exp_text": qwen4_exp_text, "prophetnet": prophetnet, "zaya": zaya, "kolibri1_1": kolibri,
    "kimi_linear": kimi_delta_hybrid, "reformer": reformer, "dory": dory, "bailing_hybrid": kimi_delta_hybrid,
    "falcon_h1": mamba2_hybrid, "bamba": mamba2_hybrid, "granitemoehybrid": mamba2_hybrid,
    **dict.fromkeys(ENCODER_ONLY, encoder_only),
}
# Multimodal wrappers whose language model sits under text_config, and its model_type when not given there.
WRAPPERS = {"gemma3": "gemma3_text", "gemma4": "gemma4_text", "llama4": "llama4_text", "qwen3_5": "qwen3_5_text",
            "qwen3_5_moe": "qwen3_5_moe_text", "mllama": "mllama_text_model"}
SUPPORTED = tuple(sorted(set(FAMILIES) | set(WRAPPERS)))
