"""The engine view: what a named vLLM release allocates for a model's KV cache, torch-free.

vllm_rules.py holds one profile per release (each rule cited to that release's source), layout.py turns a
ModelFacts into that release's KV cache groups, capacity.py gives weights as stored, fits and the startup log
the release would print, gpus.py the device memory of common GPUs, resolve.py catalogue names and repo ids.
"""
from .capacity import fits, layout_for, refusals, vllm_log, weights
from .gpus import DEFAULT_GPUS, GPUS, gpu_bytes, parse_size
from .layout import EngineLayout, build_layout
from .resolve import catalogue_name_for, resolve
from .vllm_rules import DEFAULT_PROFILE, PROFILES, EngineError, VllmProfile, profile_for

__all__ = ["DEFAULT_GPUS", "DEFAULT_PROFILE", "GPUS", "PROFILES", "EngineError", "EngineLayout", "VllmProfile",
           "build_layout", "catalogue_name_for", "fits", "gpu_bytes", "layout_for", "parse_size", "profile_for",
           "refusals", "resolve", "vllm_log", "weights"]
