"""A stand-in ``vllm`` package for running real SGLang 0.5.23 on a CPU without vllm.

Why: off CUDA, and without the sgl_kernel CPU build (``SGLANG_USE_CPU_ENGINE`` unset),
SGLang's ``RotaryEmbedding`` imports ``vllm._custom_ops.rotary_embedding`` as its fallback
kernel (sglang/srt/layers/rotary_embedding/base.py).  Only that one op is provided, in
``_custom_ops``; anything else imported from here fails loudly, as it would without vllm.
"""
