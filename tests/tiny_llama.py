"""Build the tiny Llama the engine tests serve: no download, random weights, a locally trained tokenizer.

Run with the engine venv's Python (it has ``torch``, ``transformers`` and ``tokenizers``)::

    .venv-engine/bin/python tests/tiny_llama.py .cache/tiny-llama

2 layers, hidden 128, 4 heads (head size 32: vLLM's CPU attention needs >= 32), vocab 4096, fp32
weights drawn with a fixed seed; a byte-level BPE tokenizer trained on deterministic pseudo-English.
The model writes gibberish; the tests care about timings and counters, not text. A finished build
leaves ``.complete`` (holding the build parameters), so an interrupted build is redone.
"""

from __future__ import annotations

import json
import random
import shutil
import sys
from pathlib import Path

PARAMS = {
    "vocab_size": 4096,
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "max_position_embeddings": 2048,
    "seed": 0,
}
SPECIAL = ["<s>", "</s>", "<unk>"]  # ids 0, 1, 2


def _corpus(n_lines: int = 20000) -> list[str]:
    rng = random.Random(PARAMS["seed"])
    onsets = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "st", "tr", "pl", "ch"]
    vowels = ["a", "e", "i", "o", "u", "ai", "ea", "ou"]
    words = sorted(
        {"".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(rng.randint(1, 3))) for _ in range(3000)}
    )
    lines = []
    for _ in range(n_lines):
        n = rng.randint(4, 16)
        lines.append(" ".join(rng.choice(words) for _ in range(n)).capitalize() + rng.choice([".", ",", "?", "!"]))
    return lines


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    marker = out / ".complete"
    if marker.exists() and json.loads(marker.read_text()) == PARAMS:
        return
    tmp = out.with_name(out.name + ".partial")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=PARAMS["vocab_size"],
        special_tokens=SPECIAL,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        model_max_length=PARAMS["max_position_embeddings"],
    )
    fast.save_pretrained(tmp)

    torch.manual_seed(PARAMS["seed"])
    cfg = LlamaConfig(
        **{k: v for k, v in PARAMS.items() if k != "seed"},
        bos_token_id=0,
        eos_token_id=1,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    LlamaForCausalLM(cfg).to(torch.float32).save_pretrained(tmp, safe_serialization=True)
    (tmp / ".complete").write_text(json.dumps(PARAMS))
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: tiny_llama.py OUT_DIR")
    build(Path(sys.argv[1]))
