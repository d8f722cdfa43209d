#!/usr/bin/env python3
"""Reference sentence embeddings of all-MiniLM-L6-v2, without torch, to check agentd's own.

Runs what sentence-transformers runs for this model (modules.json: Transformer, mean Pooling,
Normalize), in numpy:
- tokenizer.json through the `tokenizers` package (BERT WordPiece, lowercased, [CLS] ... [SEP]),
  with the truncation sentence-transformers applies (max_seq_length 256 in
  sentence_bert_config.json) instead of the file's own (truncate at 128 and pad every input to
  128: those would not change the pooled vector, but cost time), and padding to the longest of a
  batch;
- the 6-layer BERT encoder (hidden 384, 12 heads of 32, GELU with erf, LayerNorm eps 1e-12) from
  model.safetensors, in float64 by default (--float32 to compute as torch does on the CPU);
- the mean of the last hidden states over the attention mask, then L2 normalization.

    target/vector-venv/bin/python tests/vector/reference_embed.py            # the reference numbers
    target/vector-venv/bin/python tests/vector/reference_embed.py --json "a" "b"   # full vectors

tests/vector/setup.sh installs numpy, safetensors and tokenizers into target/vector-venv and the
model into target/models/all-minilm-l6-v2/ (--model DIR for another folder).
"""

import argparse
import json
import math
import pathlib
import sys

import numpy as np
from safetensors.numpy import load_file
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEFAULT_MODEL = ROOT / "target" / "models" / "all-minilm-l6-v2"

FOX = "The quick brown fox jumps over the lazy dog."
QUERY = "How do I reset my password?"
RELATED = "Steps to recover account access"
UNRELATED = "The weather is sunny today"


class MiniLM:
    def __init__(self, model_dir, dtype=np.float64):
        model_dir = pathlib.Path(model_dir)
        self.config = json.loads((model_dir / "config.json").read_text())
        st = json.loads((model_dir / "sentence_bert_config.json").read_text())
        self.max_len = st["max_seq_length"]
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_len)
        self.w = {k: v.astype(dtype) for k, v in load_file(str(model_dir / "model.safetensors")).items()
                  if v.dtype.kind == "f"}
        self.dtype = dtype
        self.erf = np.vectorize(math.erf, otypes=[dtype])

    def layer_norm(self, x, prefix):
        eps = self.config["layer_norm_eps"]
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def dense(self, x, prefix):
        # torch's Linear: weight is [out, in].
        return x @ self.w[prefix + ".weight"].T + self.w[prefix + ".bias"]

    def gelu(self, x):
        return 0.5 * x * (1.0 + self.erf(x / math.sqrt(2.0)))

    def tokenize(self, sentences):
        enc = self.tokenizer.encode_batch(list(sentences))
        n = max(len(e.ids) for e in enc)
        ids = np.zeros((len(enc), n), dtype=np.int64)
        types = np.zeros((len(enc), n), dtype=np.int64)
        mask = np.zeros((len(enc), n), dtype=np.int64)
        for i, e in enumerate(enc):
            ids[i, : len(e.ids)] = e.ids
            types[i, : len(e.ids)] = e.type_ids
            mask[i, : len(e.ids)] = e.attention_mask
        return enc, ids, types, mask

    def hidden_states(self, ids, types, mask):
        c, w = self.config, self.w
        batch, n = ids.shape
        heads = c["num_attention_heads"]
        head_dim = c["hidden_size"] // heads
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][np.arange(n)][None, :, :]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = self.layer_norm(x, "embeddings.LayerNorm")
        # Padding keys get the most negative number, as transformers does.
        bias = np.where(mask[:, None, None, :] == 1, 0.0, np.finfo(self.dtype).min).astype(self.dtype)
        for layer in range(c["num_hidden_layers"]):
            p = f"encoder.layer.{layer}"

            def split(t):
                return t.reshape(batch, n, heads, head_dim).transpose(0, 2, 1, 3)

            q = split(self.dense(x, p + ".attention.self.query"))
            k = split(self.dense(x, p + ".attention.self.key"))
            v = split(self.dense(x, p + ".attention.self.value"))
            scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim) + bias
            scores = scores - scores.max(-1, keepdims=True)
            probs = np.exp(scores)
            probs /= probs.sum(-1, keepdims=True)
            ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(batch, n, heads * head_dim)
            x = self.layer_norm(x + self.dense(ctx, p + ".attention.output.dense"), p + ".attention.output.LayerNorm")
            inner = self.gelu(self.dense(x, p + ".intermediate.dense"))
            x = self.layer_norm(x + self.dense(inner, p + ".output.dense"), p + ".output.LayerNorm")
        return x

    def embed(self, sentences):
        _, ids, types, mask = self.tokenize(sentences)
        h = self.hidden_states(ids, types, mask)
        m = mask[:, :, None].astype(self.dtype)
        pooled = (h * m).sum(1) / np.clip(m.sum(1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("sentences", nargs="*", help="print these sentences' embeddings (with --json)")
    ap.add_argument("--model", default=str(DEFAULT_MODEL), help="folder of model.safetensors, tokenizer.json, config.json")
    ap.add_argument("--float32", action="store_true", help="compute in float32 (as torch on the CPU) instead of float64")
    ap.add_argument("--json", action="store_true", help="print {sentence: [384 floats], ...} as JSON")
    args = ap.parse_args()
    model = MiniLM(args.model, np.float32 if args.float32 else np.float64)

    if args.json:
        sentences = args.sentences or [FOX, QUERY, RELATED, UNRELATED]
        vectors = model.embed(sentences)
        json.dump({s: [float(x) for x in v] for s, v in zip(sentences, vectors)}, sys.stdout)
        print()
        return

    c = model.config
    print(f"model: BERT hidden {c['hidden_size']}, layers {c['num_hidden_layers']}, heads {c['num_attention_heads']}, "
          f"intermediate {c['intermediate_size']}, max positions {c['max_position_embeddings']}, vocab {c['vocab_size']}, "
          f"dtype {np.dtype(model.dtype).name}")
    enc, *_ = model.tokenize([FOX])
    print(f"tokens of {FOX!r}: {enc[0].tokens}")
    print(f"ids: {enc[0].ids}")
    sentences = [FOX, QUERY, RELATED, UNRELATED]
    batch = model.embed(sentences)
    # Padding in a batch must not change a vector: each alone must give the same one.
    alone = np.stack([model.embed([s])[0] for s in sentences])
    drift = float(np.abs(batch - alone).max())
    assert drift < (1e-5 if model.dtype == np.float32 else 1e-10), f"batched and single embeddings differ by {drift}"
    fox = batch[0]
    print(f"norm of the fox's embedding: {np.linalg.norm(fox):.9f}")
    print("first 8 dims of the fox's embedding: [" + ", ".join(f"{x:.6f}" for x in fox[:8]) + "]")
    print(f"cosine({QUERY!r}, {RELATED!r}) = {float(batch[1] @ batch[2]):.6f}")
    print(f"cosine({QUERY!r}, {UNRELATED!r}) = {float(batch[1] @ batch[3]):.6f}")
    print(f"largest difference between batched (padded) and single embeddings: {drift:.2e}")


if __name__ == "__main__":
    main()
