#!/usr/bin/env python3
"""Hugging Face interop: models built by transformers, run by pmlir.

  python bench/hf_interop.py [--build build] [--work DIR]

Run with `transformers` and `torch` from PyPI in a virtual environment (not
the test path's Debian torch), e.g.

  python3 -m venv venv && venv/bin/pip install torch transformers safetensors
  venv/bin/python bench/hf_interop.py

For each family pmlir-gen reads (GPT-2 tied and untied with erf GELU,
Llama with grouped-query attention, Llama with attention_bias and mlp_bias,
Qwen2, Mistral), transformers builds a small random model and saves it
with save_pretrained, once whole and once sharded behind
model.safetensors.index.json; pmlir-gen hf builds the model from the
directory's config.json alone; pmlir-run runs it from the directory on one
rank and on tp = 2 (Megatron) and its logits are compared with
transformers' own forward in float64. Then pmlir trains each a step on
tp = 2 and exports it (--export-hf); from_pretrained loads the export with
no key missing or unexpected, and its float64 forward is compared with
pmlir's run of the export. Prints one row per run and the transformers
version; exits 1 if any run is off by more than 1e-4.
"""
import argparse
import os
import struct
import subprocess
import sys
import tempfile
import json

import torch
import transformers

SEQ, BATCH = 16, 2


def models():
    t = transformers
    small = dict(vocab_size=101, hidden_size=64, intermediate_size=96, num_hidden_layers=2,
                 num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=64)
    yield "gpt2 tied", t.GPT2LMHeadModel(t.GPT2Config(
        vocab_size=97, n_embd=64, n_layer=2, n_head=4, n_positions=32))
    yield "gpt2 untied, erf GELU, n_inner", t.GPT2LMHeadModel(t.GPT2Config(
        vocab_size=97, n_embd=64, n_layer=2, n_head=4, n_positions=32, n_inner=96,
        activation_function="gelu", tie_word_embeddings=False, layer_norm_epsilon=1e-6))
    yield "llama GQA", t.LlamaForCausalLM(t.LlamaConfig(**small, rope_theta=500000.0))
    yield "llama attention_bias, mlp_bias", t.LlamaForCausalLM(t.LlamaConfig(
        **small, attention_bias=True, mlp_bias=True))
    yield "qwen2", t.Qwen2ForCausalLM(t.Qwen2Config(**small, tie_word_embeddings=True))
    yield "mistral", t.MistralForCausalLM(t.MistralConfig(**small, sliding_window=4096))


def write_ids(path, ids):
    data = ids.to(torch.int64).numpy().tobytes()
    header = json.dumps({"input_ids": {"dtype": "I64", "shape": list(ids.shape),
                                       "data_offsets": [0, len(data)]}}).encode()
    header += b" " * ((8 - len(header) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + data)


def read_logits(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    entry = json.loads(raw[8:8 + n])["logits"]
    b, e = entry["data_offsets"]
    values = torch.frombuffer(bytearray(raw[8 + n + b:8 + n + e]), dtype=torch.float32)
    return values.reshape(entry["shape"]).double()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--work", default=None)
    args = ap.parse_args()
    gen = os.path.join(args.build, "bin", "pmlir-gen")
    run = os.path.join(args.build, "bin", "pmlir-run")
    work = args.work or tempfile.mkdtemp(prefix="pmlir-hf-")
    torch.manual_seed(0)
    transformers.utils.logging.disable_progress_bar()
    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    print(f"{'model':34} {'checkpoint':8} {'mesh':6} {'relative error':>14}")
    worst = 0.0
    for k, (name, model) in enumerate(models()):
        model.eval()
        # Biases and norms away from their init, as a trained model's are.
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.02 * torch.randn_like(p))
        vocab = model.config.vocab_size
        ids = torch.randint(0, vocab, (BATCH, SEQ))
        with torch.no_grad():
            expected = model.double()(ids).logits
        model.float()
        for layout, shard in (("whole", None), ("sharded", "20KB")):
            directory = os.path.join(work, f"{k}-{layout}")
            if shard:
                model.save_pretrained(directory, max_shard_size=shard)
            else:
                model.save_pretrained(directory)
            mlir, inputs = os.path.join(directory, "model.mlir"), os.path.join(directory, "in.st")
            subprocess.run([gen, "hf", directory, "--seq", str(SEQ), "--batch", str(BATCH),
                            "-o", mlir], check=True)
            write_ids(inputs, ids)
            for mesh in ("", "tp=2"):
                out = os.path.join(directory, f"out{mesh}.st")
                command = [run, mlir, "--weights", directory, "--inputs", inputs, "--output", out]
                if mesh:
                    command += ["--mesh", mesh, "--recipe", "megatron"]
                subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
                got = read_logits(out)
                error = ((got - expected).norm() / expected.norm()).item()
                worst = max(worst, error)
                print(f"{name:34} {layout:8} {mesh or '1 rank':6} {error:14.2e}")
        # Back out: one step trained by pmlir on tp = 2, exported, loaded by
        # from_pretrained (no key missing or unexpected) and run by
        # transformers in float64 against pmlir's run of the same export.
        directory = os.path.join(work, f"{k}-whole")
        loss_mlir, mlir = os.path.join(directory, "loss.mlir"), os.path.join(directory, "model.mlir")
        tokens, exported = os.path.join(directory, "tokens.bin"), os.path.join(directory, "exported")
        subprocess.run([gen, "hf", directory, "--seq", str(SEQ), "--batch", str(BATCH), "--loss",
                        "-o", loss_mlir], check=True)
        torch.randint(0, vocab, (4 * BATCH * (SEQ + 1),), dtype=torch.int16).numpy().tofile(tokens)
        subprocess.run([run, loss_mlir, "--weights", directory, "--train", "--steps", "1",
                        "--data", tokens, "--lr", "1e-2", "--mesh", "tp=2", "--recipe", "megatron",
                        "--export-hf", exported], check=True, stdout=subprocess.DEVNULL)
        loaded, info = transformers.AutoModelForCausalLM.from_pretrained(
            exported, output_loading_info=True, attn_implementation="eager")
        keys = len(info["missing_keys"]) + len(info["unexpected_keys"])
        with torch.no_grad():
            reference = loaded.double()(ids).logits
        out = os.path.join(exported, "out.st")
        subprocess.run([run, mlir, "--weights", exported, "--inputs",
                        os.path.join(directory, "in.st"), "--output", out], check=True,
                       stdout=subprocess.DEVNULL)
        error = ((read_logits(out) - reference).norm() / reference.norm()).item()
        worst = max(worst, error if keys == 0 else float("inf"))
        print(f"{name:34} {'exported':8} {'1 rank':6} {error:14.2e}"
              f"  (from_pretrained: {keys} keys missing or unexpected)")
    print(f"worst relative error {worst:.2e} (tolerance 1e-4)")
    return 0 if worst <= 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
