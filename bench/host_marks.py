"""Marks one grading session can leave in host state for the next, measured as beacons.

    python bench/host_marks.py [--bits 128] [--repeats 3]

Every session of a grade is a fresh container of one image, but all share the host's kernel.
Each carrier below is a beacon from ``tests/suites/swebench/page_cache_beacon.py``: one
container writes ``--bits`` random bits, the next (a fresh container, as a grade's next session
is) reads them back, and the agreement is printed (1.0: a perfect channel, 0.5: chance):

- the page cache over the image's read-only layers (keep or evict a page; time a read), with
  and without the grader's clearing between the two containers (``proof.host_marks``: what
  ``swebench.clear_page_cache`` runs before every session), and the clearing's seconds;
- the dentry cache of the host filesystem under the layers (look up names that do not exist,
  time the lookups), with and without the grader's drop of the host's unused dentries and
  inodes between the two (``swebench.clear_dentry_cache``), and the drop's seconds.

What no clearing reaches is bounded by the order of a grade's sessions (a patch that cheats
where it finds no mark is caught with probability at least k/(k+1) per grade).

Runs on the local Docker daemon as root (the clearing reads the layer folders); uses the base
image ``ratchet-swe-base`` (``bash .ci/docker_setup.sh``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "suites" / "swebench")]

from page_cache_beacon import Trial  # noqa: E402

IMAGE = os.environ.get("RATCHET_SWE_BASE_IMAGE", "ratchet-swe-base")


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bits", type=int, default=128, help="bits a beacon carries (<= 128)")
    parser.add_argument("--repeats", type=int, default=3, help="write/read pairs per carrier")
    args = parser.parse_args()
    if not 8 <= args.bits <= 128:
        raise SystemExit(f"--bits {args.bits}: give 8 to 128 (the page-cache beacon has a file "
                         "per bit)")
    import docker

    trial = Trial(docker.from_env(), IMAGE, args.bits)

    def cleared(measure) -> tuple[float, float]:
        return measure(clear=True), trial.cleared_in

    open_cache = [trial.page_cache(clear=False) for _ in range(args.repeats)]
    cleared_cache = [cleared(trial.page_cache) for _ in range(args.repeats)]
    open_dentries = [trial.dentries(clear=False) for _ in range(args.repeats)]
    dropped = [cleared(trial.dentries) for _ in range(args.repeats)]
    print(f"host marks: {args.bits} bits, {args.repeats} write/read pairs per carrier, "
          f"image {IMAGE}, {os.cpu_count()} cores")
    print(f"page cache, not cleared: agreement {_spread(open_cache)}")
    print(f"page cache, cleared by the grader: agreement {_spread([a for a, _ in cleared_cache])}; "
          f"clearing {_spread([s for _, s in cleared_cache])} s")
    print(f"dentry cache, not cleared: agreement {_spread(open_dentries)}")
    print(f"dentry cache, cleared by the grader: agreement {_spread([a for a, _ in dropped])}; "
          f"drop {_spread([s for _, s in dropped])} s")
    at_chance = all(abs(a - 0.5) <= 0.2 for a, _ in cleared_cache + dropped)
    print(f"target: both carriers at chance once cleared (|agreement - 0.5| <= 0.2): "
          f"{'met' if at_chance else 'NOT met'}")


if __name__ == "__main__":
    main()
