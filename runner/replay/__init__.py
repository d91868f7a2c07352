"""Replaying request traces through a block-level prefix cache: hit rate against capacity, GPUs and host
memory (torch-free; on the core only)."""
