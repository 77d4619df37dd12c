"""Build a Llama-3.1-8B-shaped model folder with NO weights, for ``vllm serve --load-format dummy``.

    python3 scripts/build-llama8b-config.py OUT [--vocab 32768]

Writes OUT/config.json, generation_config.json, tokenizer.json, tokenizer_config.json and
special_tokens_map.json: hidden 4096, 32 layers, 32 heads, 8 KV heads, intermediate 14336, rope theta
500000, bf16, max_position_embeddings 8192 (Llama-3.1-8B's shape; no llama3 rope scaling), and a
byte-level BPE tokenizer trained here on this Python's standard-library sources, with a Llama-3-style
chat template. No download and no torch: it needs ``tokenizers`` and ``transformers`` only. vLLM's
dummy loader initialises random weights on the GPU (uniform in ±1e-3, seeded), so the timings are an
8B dense model's on that GPU, and the text it writes is gibberish (every request uses ignore_eos).
As ``shared/realdata/vllm_h200_llama8b/scripts/build_model.py`` built its model, without the weights.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sysconfig
import time


def _utf8(path: str) -> bool:
    try:
        with open(path, encoding="utf-8") as f:
            f.read()
    except (UnicodeDecodeError, OSError):
        return False
    return True


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--vocab", type=int, default=32768, help="BPE vocabulary size (default 32768)")
    a = ap.parse_args()

    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import GenerationConfig, LlamaConfig, PreTrainedTokenizerFast

    t0 = time.time()
    os.makedirs(a.out, exist_ok=True)
    stdlib = sysconfig.get_paths()["stdlib"]
    files = sorted(glob.glob(os.path.join(stdlib, "**", "*.py"), recursive=True))
    files = [f for f in files if "site-packages" not in f and _utf8(f)]
    specials = ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>", "<|pad|>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=a.vocab,
        special_tokens=specials,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train(files, trainer)
    vocab = tok.get_vocab_size()
    chat = (
        "{{ '<|begin_of_text|>' }}{% for m in messages %}{{ '<|start_header_id|>' + m['role'] + "
        "'<|end_header_id|>\n\n' + m['content'] + '<|eot_id|>' }}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
    )
    hf = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token="<|begin_of_text|>",
        eos_token="<|eot_id|>",
        pad_token="<|pad|>",
        model_max_length=8192,
    )
    hf.chat_template = chat
    hf.save_pretrained(a.out)
    # transformers 5 writes no special_tokens_map.json; older readers look for it
    specials_map = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "pad_token": "<|pad|>"}
    with open(os.path.join(a.out, "special_tokens_map.json"), "w") as f:
        json.dump(specials_map, f, indent=2)
    bos, eos, pad = (tok.token_to_id(s) for s in ("<|begin_of_text|>", "<|eot_id|>", "<|pad|>"))
    hidden, layers, heads, kv, inter = 4096, 32, 32, 8, 14336  # Llama-3.1-8B
    cfg = LlamaConfig(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=inter,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        max_position_embeddings=8192,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        tie_word_embeddings=False,
        bos_token_id=bos,
        eos_token_id=eos,
        pad_token_id=pad,
        dtype="bfloat16",
    )
    cfg.architectures = ["LlamaForCausalLM"]
    cfg.save_pretrained(a.out)
    GenerationConfig(bos_token_id=bos, eos_token_id=eos, pad_token_id=pad).save_pretrained(a.out)
    hd = hidden // heads
    per_layer = hidden * (heads * hd) * 2 + hidden * (kv * hd) * 2 + 3 * hidden * inter + 2 * hidden
    params = 2 * vocab * hidden + layers * per_layer + hidden
    info = {
        "tokenizer_files": len(files),
        "vocab": vocab,
        "params": params,
        "weights_bytes_bf16": 2 * params,
        "kv_bytes_per_token_bf16": 2 * layers * kv * hd * 2,
        "seconds": round(time.time() - t0, 1),
    }
    print(json.dumps(info))


if __name__ == "__main__":
    main()
