"""Two ways to run the local embedder (all-MiniLM-L6-v2): today's sentence-transformers on torch's
CPU build, against the same weights run by a NumPy forward pass that needs no torch at all.

    python bench/embedder_paths.py [--texts 256] [--repeat 3]

It prints, for each path: the size on disk of what only that path installs (torch, transformers
and sentence-transformers for the first; nothing beyond the core's NumPy and SciPy plus the
tokenizers and safetensors packages both share for the second), the cold start (first
embedding, model load included) and the embedding throughput on skill-sized texts; then the
ratios (NumPy / torch; target for a switch: the same vectors, cosine >= 0.9999, and throughput
ratio >= 0.5), and the largest difference between the two paths' vectors. Run it on a quiet
machine: it times the embedder, not its neighbours.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ratchet_ray.llm.local import minilm_model_path  # noqa: E402

TORCH_ONLY = ("torch", "transformers", "sentence_transformers")


class NumpyMiniLM:
    """MiniLM-L6 (BERT, 6 layers, 384 wide) from its safetensors, mean-pooled and normalised as
    sentence-transformers' modules.json says; the tokenizer is the model's tokenizer.json."""

    def __init__(self, folder: Path):
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((folder / "config.json").read_text())
        self.heads = config["num_attention_heads"]
        self.eps = config["layer_norm_eps"]
        self.layers = config["num_hidden_layers"]
        self.w = {k: v.astype(np.float32) for k, v in
                  load_file(str(folder / "model.safetensors")).items()}
        max_len = json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(max_len)
        self.tok.enable_padding(pad_id=config["pad_token_id"])

    def _norm(self, x: np.ndarray, name: str) -> np.ndarray:
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[f"{name}.weight"] + self.w[f"{name}.bias"]

    def _dense(self, x: np.ndarray, name: str) -> np.ndarray:
        return x @ self.w[f"{name}.weight"].T + self.w[f"{name}.bias"]

    def embed(self, texts: list[str]) -> np.ndarray:
        from scipy.special import erf

        enc = self.tok.encode_batch(texts)
        ids = np.array([e.ids for e in enc])
        mask = np.array([e.attention_mask for e in enc], dtype=np.float32)
        x = (self.w["embeddings.word_embeddings.weight"][ids]
             + self.w["embeddings.position_embeddings.weight"][: ids.shape[1]]
             + self.w["embeddings.token_type_embeddings.weight"][0])
        x = self._norm(x, "embeddings.LayerNorm")
        batch, length, width = x.shape
        head = width // self.heads
        bias = (1.0 - mask)[:, None, None, :] * np.finfo(np.float32).min
        for i in range(self.layers):
            p = f"encoder.layer.{i}"

            def split(t: np.ndarray) -> np.ndarray:
                return t.reshape(batch, length, self.heads, head).transpose(0, 2, 1, 3)

            q, k, v = (split(self._dense(x, f"{p}.attention.self.{n}"))
                       for n in ("query", "key", "value"))
            scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head) + bias
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            context = (scores / scores.sum(-1, keepdims=True)) @ v
            context = context.transpose(0, 2, 1, 3).reshape(batch, length, width)
            x = self._norm(self._dense(context, f"{p}.attention.output.dense") + x,
                           f"{p}.attention.output.LayerNorm")
            inner = self._dense(x, f"{p}.intermediate.dense")
            inner = 0.5 * inner * (1.0 + erf(inner / np.sqrt(2.0)))  # BERT's exact GELU
            x = self._norm(self._dense(inner, f"{p}.output.dense") + x, f"{p}.output.LayerNorm")
        pooled = (x * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1e-9)
        return pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


def size_mb(package: str) -> float:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return 0.0
    root = Path(next(iter(spec.submodule_search_locations)))
    return sum(f.stat().st_size for f in root.rglob("*") if f.is_file()) / 2**20


def texts(n: int) -> list[str]:
    """Skill-sized texts: intents and task statements like the Router and the dedup embed."""
    stems = ["Guard the recursion with a base case before calling the function again",
             "Write a function to find the shared elements from the given two lists",
             "Return a tuple, not a list, when the task's assert compares with a tuple",
             "Check the empty input first and return the neutral value of the operation",
             "Count the characters at the same position in a string as in the alphabet"]
    return [f"{stems[i % len(stems)]} (case {i})" for i in range(n)]


def timed(embed, batch: list[str], repeat: int) -> tuple[float, float, np.ndarray]:
    started = time.perf_counter()
    first = embed(batch[:8])
    cold = time.perf_counter() - started
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        vectors = embed(batch)
        best = min(best, time.perf_counter() - started)
    del first
    return cold, len(batch) / best, np.asarray(vectors, dtype=np.float32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    folder = minilm_model_path()
    batch = texts(args.texts)

    def torch_embed(items: list[str]) -> np.ndarray:
        from sentence_transformers import SentenceTransformer

        if not hasattr(torch_embed, "model"):
            torch_embed.model = SentenceTransformer(str(folder), device="cpu",
                                                    local_files_only=True)
        return torch_embed.model.encode(items, batch_size=32, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)

    def numpy_embed(items: list[str]) -> np.ndarray:
        if not hasattr(numpy_embed, "model"):
            numpy_embed.model = NumpyMiniLM(Path(folder))
        return np.concatenate([numpy_embed.model.embed(items[i:i + 32])
                               for i in range(0, len(items), 32)])

    t_cold, t_rate, t_vec = timed(torch_embed, batch, args.repeat)
    n_cold, n_rate, n_vec = timed(numpy_embed, batch, args.repeat)
    torch_mb = sum(size_mb(p) for p in TORCH_ONLY)
    cosine = float((t_vec * n_vec).sum(1).min())
    print(f"torch path: {torch_mb:.0f} MB only it installs ({', '.join(TORCH_ONLY)}); cold start "
          f"{t_cold:.2f} s; {t_rate:.0f} texts/s")
    print(f"numpy path: 0 MB beyond the core; cold start {n_cold:.2f} s; {n_rate:.0f} texts/s")
    print(f"numpy / torch: throughput {n_rate / t_rate:.2f}, cold start {n_cold / t_cold:.2f}; "
          f"lowest cosine between the paths' vectors {cosine:.6f}, largest difference "
          f"{float(np.abs(t_vec - n_vec).max()):.2e} over {len(batch)} texts")


if __name__ == "__main__":
    main()
