"""Write a tiny, made-up model directory that real SGLang 0.5.23 can launch on a CPU.

Why: the real-SGLang tier must start a genuine server without downloading anything.
SGLang only needs a HuggingFace-style directory: ``config.json`` naming a supported
architecture, plus a tokenizer.  With ``--load-format dummy`` the weights are random, so no
``*.safetensors`` file is written; the size of the dummy weights follows from the config
alone (``hidden_size``, ``intermediate_size``, layers, vocab), which is how ``--hidden`` and
``--layers`` make a "bigger" model for memory-sizing failures.

The tokenizer is a WordLevel ``tokenizer.json`` written as plain JSON (the documented
``tokenizers`` serialization), so this module needs only the standard library and can run
under any Python, including the dev venv that has no ``tokenizers`` package.

Usage::

    python -m tests.realsglang.make_tiny_model OUT_DIR [--kind llama|hybrid]
        [--hidden 64] [--intermediate 128] [--layers 2] [--vocab 256]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SPECIAL_TOKENS = ["<unk>", "<s>", "</s>", "<pad>"]
UNK_ID, BOS_ID, EOS_ID, PAD_ID = range(4)

# Real words first, so a prompt like "hello world" tokenizes to something other than <unk>.
_WORDS = (
    "the of and to a in is it you that he was for on are with as i his they be at one have "
    "this from or had by hot word but what some we can out other were all there when up use "
    "your how said an each she which do their time if will way about many then them write "
    "would like so these her long make thing see him two has look more day could go come did "
    "number sound no most people my over know water than call first who may down side been "
    "now find hello world tell me story once upon paris capital france what is"
).split()


def vocabulary(size: int) -> dict[str, int]:
    """Token -> id: the special tokens, the word list, then ``tok<N>`` fillers up to size."""
    if size < len(SPECIAL_TOKENS) + 1:
        raise ValueError(f"vocab size {size} is too small")
    vocab: dict[str, int] = {}
    for token in SPECIAL_TOKENS + _WORDS:
        if token not in vocab and len(vocab) < size:
            vocab[token] = len(vocab)
    filler = 0
    while len(vocab) < size:
        vocab[f"tok{filler}"] = len(vocab)
        filler += 1
    return vocab


def tokenizer_json(vocab: dict[str, int]) -> dict:
    """A complete ``tokenizers`` WordLevel serialization (lowercase, split on whitespace)."""
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": vocab[tok],
                "content": tok,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for tok in SPECIAL_TOKENS
        ],
        "normalizer": {"type": "Lowercase"},
        "pre_tokenizer": {"type": "Whitespace"},
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"},
    }


def tokenizer_config(max_length: int) -> dict:
    return {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": "<s>",
        "eos_token": "</s>",
        "unk_token": "<unk>",
        "pad_token": "<pad>",
        "model_max_length": max_length,
        "clean_up_tokenization_spaces": False,
        # A plain template so /v1/chat/completions works too (words joined by spaces).
        "chat_template": (
            "{% for message in messages %}{{ message['content'] }} {% endfor %}"
            "{% if add_generation_prompt %}assistant {% endif %}"
        ),
    }


def llama_config(hidden: int, intermediate: int, layers: int, vocab: int, context: int) -> dict:
    heads = max(1, hidden // 16)
    return {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": max(1, heads // 2),
        "head_dim": 16,
        "hidden_act": "silu",
        "vocab_size": vocab,
        "max_position_embeddings": context,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "tie_word_embeddings": False,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": PAD_ID,
        "torch_dtype": "bfloat16",
    }


def hybrid_config(hidden: int, intermediate: int, layers: int, vocab: int, context: int) -> dict:
    """A made-up Qwen3.5-style hybrid: Gated-DeltaNet (linear attention) layers with one full
    attention layer every fourth layer, the shape SGLang sizes a Mamba state pool for."""
    heads = max(1, hidden // 16)
    layer_types = [
        "full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(layers)
    ]
    return {
        "architectures": ["Qwen3_5ForCausalLM"],
        "model_type": "qwen3_5_text",
        "hidden_size": hidden,
        "intermediate_size": intermediate,
        "num_hidden_layers": layers,
        "layer_types": layer_types,
        "full_attention_interval": 4,
        "num_attention_heads": heads,
        "num_key_value_heads": max(1, heads // 2),
        "head_dim": 16,
        "linear_num_key_heads": 2,
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 16,
        "linear_value_head_dim": 16,
        "linear_conv_kernel_dim": 4,
        "hidden_act": "silu",
        "vocab_size": vocab,
        "max_position_embeddings": context,
        "rms_norm_eps": 1e-6,
        "rope_theta": 10000.0,
        "partial_rotary_factor": 0.25,
        "attn_output_gate": True,
        "tie_word_embeddings": False,
        "bos_token_id": BOS_ID,
        "eos_token_id": EOS_ID,
        "pad_token_id": PAD_ID,
        "torch_dtype": "bfloat16",
    }


def write_model(
    out: Path,
    *,
    kind: str = "llama",
    hidden: int = 64,
    intermediate: int = 128,
    layers: int = 2,
    vocab: int = 256,
    context: int = 2048,
) -> Path:
    """Create (or refresh) the model directory ``out`` and return it."""
    builders = {"llama": llama_config, "hybrid": hybrid_config}
    if kind not in builders:
        raise ValueError(f"unknown kind {kind!r}; expected one of {sorted(builders)}")
    out.mkdir(parents=True, exist_ok=True)
    words = vocabulary(vocab)
    files = {
        "config.json": builders[kind](hidden, intermediate, layers, vocab, context),
        "tokenizer.json": tokenizer_json(words),
        "tokenizer_config.json": tokenizer_config(context),
        "special_tokens_map.json": {
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "pad_token": "<pad>",
        },
        "generation_config.json": {"bos_token_id": BOS_ID, "eos_token_id": EOS_ID},
    }
    for name, content in files.items():
        (out / name).write_text(json.dumps(content, indent=1) + "\n")
    return out


def dummy_weight_bytes(
    *, hidden: int, intermediate: int, layers: int, vocab: int, bytes_per_param: int = 2
) -> int:
    """Rough bf16 size of a llama config's weights (to pick a size for a memory failure)."""
    heads = max(1, hidden // 16)
    kv_heads = max(1, heads // 2)
    attn = hidden * 16 * (heads + 2 * kv_heads) + heads * 16 * hidden
    mlp = 3 * hidden * intermediate
    per_layer = attn + mlp + 2 * hidden
    return bytes_per_param * (layers * per_layer + 2 * vocab * hidden + hidden)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--kind", default="llama", choices=["llama", "hybrid"])
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--intermediate", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=256)
    parser.add_argument("--context", type=int, default=2048)
    args = parser.parse_args(argv)
    write_model(
        args.out,
        kind=args.kind,
        hidden=args.hidden,
        intermediate=args.intermediate,
        layers=args.layers,
        vocab=args.vocab,
        context=args.context,
    )
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
