"""A Triton kernel that gathers whole contiguous rows: `gather_rows(src, idx, out)` sets
out[i, :] = src[idx[i], :] in one launch, with 16-byte vector accesses where rows allow. On a CPU it runs
under Triton's interpreter (TRITON_INTERPRET=1, set before triton is imported); written for Triton 3.x.
Method: docs/methods/compaction.md."""
from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK_WORDS = 4096  # 16 KiB of 32-bit words per program: 16 words (4 x 16 B) per thread at 8 warps


@triton.jit
def _gather_rows_kernel(src_ptr, dst_ptr, idx_ptr, row_words, blocks_per_row,
                        BLOCK: tl.constexpr, EVEN: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    row = pid // blocks_per_row
    blk = pid - row * blocks_per_row
    src_row = tl.load(idx_ptr + row).to(tl.int64)
    offs = blk * BLOCK + tl.arange(0, BLOCK)
    src = src_ptr + src_row * row_words + offs
    dst = dst_ptr + row * row_words + offs
    if EVEN:
        vals = tl.load(src, eviction_policy="evict_first")
        tl.store(dst, vals)
    else:
        mask = offs < row_words
        vals = tl.load(src, mask=mask, eviction_policy="evict_first")
        tl.store(dst, vals, mask=mask)


def as_words(rows: torch.Tensor) -> torch.Tensor:
    """A contiguous [n, row] tensor as [n, words] of the widest of int32/int16/int8 dividing a row."""
    row_bytes = rows.shape[1] * rows.element_size()
    for word in (torch.int32, torch.int16, torch.int8):
        if row_bytes % word.itemsize == 0 and word.itemsize >= rows.element_size():
            return rows.view(word)
    return rows.view(torch.int8)


def launch_config(row_words: int) -> tuple[int, bool, int]:
    """(BLOCK, EVEN, num_warps) for rows of `row_words` words."""
    block = min(BLOCK_WORDS, triton.next_power_of_2(max(1, row_words)))
    return block, row_words % block == 0, 8 if block >= 2048 else 4


def gather_rows(src: torch.Tensor, idx: torch.Tensor, out: torch.Tensor) -> torch.Tensor:
    """out[i] = src[idx[i]] for 2-D contiguous src [R, row] and out [len(idx), row] of one dtype;
    idx an int64 (or int32) tensor on the same device. Returns out."""
    if src.dim() != 2 or out.dim() != 2 or src.shape[1] != out.shape[1] or out.shape[0] != idx.numel():
        raise ValueError(f"gather_rows: src {tuple(src.shape)}, idx {tuple(idx.shape)}, out {tuple(out.shape)}")
    if src.dtype != out.dtype or not (src.is_contiguous() and out.is_contiguous()):
        raise ValueError("gather_rows: src and out must be contiguous and of one dtype")
    if idx.numel() == 0 or src.shape[1] == 0:
        return out
    s, d = as_words(src), as_words(out)
    row_words = s.shape[1]
    block, even, warps = launch_config(row_words)
    blocks_per_row = triton.cdiv(row_words, block)
    grid = (idx.numel() * blocks_per_row,)
    _gather_rows_kernel[grid](s, d, idx, row_words, blocks_per_row, BLOCK=block, EVEN=even, num_warps=warps)
    return out
