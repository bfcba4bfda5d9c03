"""Frozen evaluator of the demo: mean held-out accuracy of model.predict over three seeds.

Prints logs, then one contract line:
{"scalar", "vetoes", "metrics", "seeds", "lower_is_better"}.
"""

import json
import random
import statistics
import sys
import time

SEEDS = (42, 7, 13)
N_TRAIN, N_TEST, MAX_K = 150, 150, 50


def make_data(seed):
    """Two overlapping Gaussian blobs whose x axis is stretched 3x (scale matters)."""
    rng = random.Random(seed)
    points = []
    for _ in range(N_TRAIN + N_TEST):
        label = rng.randint(0, 1)
        centre = (1.2, 0.0) if label else (-1.2, 0.0)
        x = rng.gauss(centre[0], 3.0)
        y = rng.gauss(centre[1], 1.0) + (0.9 if label else -0.9)
        points.append(((x, y), label))
    return points[:N_TRAIN], points[N_TRAIN:]


def main():
    started = time.perf_counter()
    import model

    vetoes = []
    k = getattr(model, "K", None)
    if isinstance(k, int) and k > MAX_K:
        vetoes.append(f"K={k} is over the compute budget of {MAX_K} neighbours")
    per_seed = []
    for seed in SEEDS:
        train, test = make_data(seed)
        hits = sum(model.predict(train, q) == label for q, label in test)
        per_seed.append(hits / len(test))
        print(f"seed {seed}: accuracy {per_seed[-1]:.4f}", file=sys.stderr)
    print(json.dumps({
        "scalar": round(statistics.mean(per_seed), 6),
        "vetoes": vetoes,
        "metrics": {"scalar_per_seed": per_seed, "k": k,
                    "eval_s": round(time.perf_counter() - started, 3)},
        "seeds": list(SEEDS),
        "lower_is_better": False,
    }))


if __name__ == "__main__":
    main()
