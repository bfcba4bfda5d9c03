"""The local embedder (all-MiniLM-L6-v2) as the project runs it, NumPy with no torch
(ratchet_ray/llm/minilm.py), against sentence-transformers on torch's CPU build where that is
installed (the project no longer installs it: `pip install sentence-transformers` for the
comparison, from the PyTorch CPU index to avoid the CUDA build).

    python bench/embedder_paths.py [--texts 256] [--repeat 3] [--batch 64]

It prints, for each path: the size on disk of what only the torch path installs (torch and
sentence-transformers; transformers comes with evalplus either way, and the NumPy path needs
nothing beyond NumPy, SciPy, tokenizers and safetensors, which the core has anyway), the cold
start (first embedding, model load included) and the embedding throughput on skill-sized
texts (the NumPy path with the embedder's BLAS threads and with BLAS's own); then the ratios
(NumPy / torch) and the lowest cosine and largest difference between the two paths' vectors.
Without sentence-transformers it prints the NumPy path alone and says so. Run it on a quiet machine: it times the embedder, not
its neighbours.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from ratchet_ray.llm.local import default_threads, minilm_model_path  # noqa: E402
from ratchet_ray.llm.minilm import MiniLM  # noqa: E402

# What only the torch path installs: transformers is not in it (evalplus, a core dependency,
# requires it, so every venv has it whichever path embeds).
TORCH_ONLY = ("torch", "torchgen", "functorch", "sentence_transformers")


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
    parser.add_argument("--batch", type=int, default=64, help="texts per forward pass (both paths)")
    parser.add_argument("--threads", type=int, default=default_threads(),
                        help="the NumPy path's BLAS threads (default: the embedder's, half the CPUs)")
    args = parser.parse_args()
    folder = minilm_model_path()
    batch = texts(args.texts)

    model: list[MiniLM] = []

    def numpy_embed(items: list[str], threads: int | None = args.threads) -> np.ndarray:
        if not model:
            model.append(MiniLM(folder))
        return model[0].embed(items, batch_size=args.batch, threads=threads)

    n_cold, n_rate, n_vec = timed(numpy_embed, batch, args.repeat)
    _, all_rate, _ = timed(lambda items: numpy_embed(items, None), batch, args.repeat)
    print(f"numpy path: nothing beyond NumPy, SciPy, tokenizers, safetensors; cold start "
          f"{n_cold:.2f} s; {n_rate:.0f} texts/s with {args.threads} BLAS thread(s) (the "
          f"embedder's default here), {all_rate:.0f} texts/s with BLAS's own (every core)")
    if importlib.util.find_spec("sentence_transformers") is None:
        print("torch path: not measured: sentence-transformers is not installed (the project no "
              "longer needs it; install it with torch's CPU build to compare)")
        return

    def torch_embed(items: list[str]) -> np.ndarray:
        from sentence_transformers import SentenceTransformer

        if not hasattr(torch_embed, "model"):
            torch_embed.model = SentenceTransformer(str(folder), device="cpu",
                                                    local_files_only=True)
        return torch_embed.model.encode(items, batch_size=args.batch, normalize_embeddings=True,
                                        convert_to_numpy=True, show_progress_bar=False)

    t_cold, t_rate, t_vec = timed(torch_embed, batch, args.repeat)
    torch_mb = sum(size_mb(p) for p in TORCH_ONLY)
    cosine = float((t_vec * n_vec).sum(1).min())
    print(f"torch path: {torch_mb:.0f} MB only it installs ({', '.join(TORCH_ONLY)}); cold start "
          f"{t_cold:.2f} s; {t_rate:.0f} texts/s")
    print(f"numpy / torch: throughput {n_rate / t_rate:.2f}, cold start {n_cold / t_cold:.2f}; "
          f"lowest cosine between the paths' vectors {cosine:.6f}, largest difference "
          f"{float(np.abs(t_vec - n_vec).max()):.2e} over {len(batch)} texts")


if __name__ == "__main__":
    main()
