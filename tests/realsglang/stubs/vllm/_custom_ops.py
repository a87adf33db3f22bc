"""Pure-torch ``rotary_embedding`` with vllm's in-place calling convention.

SGLang calls ``rotary_embedding(positions, query, key, head_size, cos_sin_cache, is_neox)``
and expects ``query``/``key`` to be rotated in place.  The maths matches SGLang's own
``RotaryEmbedding.forward_native``: ``cos_sin_cache`` rows are ``[cos | sin]`` for the first
``rotary_dim`` channels of each head; the rest pass through.
"""

from __future__ import annotations

import torch


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, is_neox: bool) -> torch.Tensor:
    cos = cos.unsqueeze(-2).to(x.dtype)
    sin = sin.unsqueeze(-2).to(x.dtype)
    if is_neox:
        x1, x2 = torch.chunk(x, 2, dim=-1)
    else:
        x1, x2 = x[..., ::2], x[..., 1::2]
    o1 = x1 * cos - x2 * sin
    o2 = x2 * cos + x1 * sin
    if is_neox:
        return torch.cat((o1, o2), dim=-1)
    return torch.stack((o1, o2), dim=-1).flatten(-2)


def rotary_embedding(
    positions: torch.Tensor,
    query: torch.Tensor,
    key: torch.Tensor | None,
    head_size: int,
    cos_sin_cache: torch.Tensor,
    is_neox: bool,
) -> None:
    positions = positions.flatten()
    num_tokens = positions.shape[0]
    rotary_dim = cos_sin_cache.shape[-1]
    cos, sin = cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
    for tensor in (query, key):
        if tensor is None:
            continue
        heads = tensor.view(num_tokens, -1, head_size)
        rot = heads[..., :rotary_dim]
        rot.copy_(_rotate(rot, cos, sin, is_neox))
