"""Compare the vllm stub's rotary_embedding with SGLang's own RotaryEmbedding.forward_native.

Run with the real-SGLang interpreter and the stubs on PYTHONPATH (tests/test_real_sglang.py
does).  Why: a wrong RoPE stub would not crash a dummy-weight launch, it would just compute
garbage silently; this pins it to SGLang's reference maths, for both neox and GPT-J layouts.
Prints one JSON object: {"neox": true|false, ...} per layout, true when they agree.
"""

import json

import torch
from sglang.srt.layers.rotary_embedding.base import RotaryEmbedding
from vllm._custom_ops import rotary_embedding

torch.manual_seed(0)
agree = {}
for is_neox in (True, False):
    rope = RotaryEmbedding(
        head_size=16,
        rotary_dim=8,
        max_position_embeddings=64,
        base=10000,
        is_neox_style=is_neox,
        dtype=torch.float32,
    )
    positions = torch.tensor([0, 3, 7, 63])
    query, key = torch.randn(4, 2 * 16), torch.randn(4, 16)
    q_ref, k_ref = rope.forward_native(positions, query.clone(), key.clone())
    q_stub, k_stub = query.clone(), key.clone()
    rotary_embedding(positions, q_stub, k_stub, 16, rope.cos_sin_cache, is_neox)
    agree["neox" if is_neox else "gptj"] = bool(
        torch.allclose(q_ref, q_stub, atol=1e-6)
        and torch.allclose(k_ref, k_stub, atol=1e-6)
        and not torch.allclose(q_ref, query)  # the reference really rotated something
    )
print(json.dumps(agree))
