"""How much memory the MBPP+ grader needs to judge one big result frame, as a ratio to the frame.

    python bench/mbpp_frame_memory.py [--frame-mb 500] [--cap-mb 512] [--kind string|forged_lists]

Each case runs in a fresh Python process (so ``ru_maxrss`` is that grade's peak alone): the
real bubblewrap sandbox and runner, ``session.grade_in_sandbox`` and the grader's channel, with a
solution whose one output makes a frame of about ``--frame-mb`` MiB under a ``--cap-mb`` cap:
- ``string``: an honest answer, a str of that size (the largest frames an honest runner sends:
  a container is capped at ``session.MAX_NODES`` values, a string is not);
- ``forged_lists``: the solution writes its own frame on the channel, a wire text of nested
  empty lists (nine bytes each, tens of bytes each once built), which the runner never sends.
Prints, per case, the grader's peak RSS above its warmed-up baseline, the frame's size, their
ratio and the verdict. Target: a ratio of at most about 2 (the frame read once, its text
decoded once) for the honest frame, and a forged frame refused before it is built (ratio well
under 1 beyond the frame itself). Issue 44 measured 70 -> 1,511 MiB (ratio 2.8) for one
string frame just under the 512 MB cap before the channel stopped copying frames.
The machine needs RAM for the sandbox's runner too (about 6x the frame while it encodes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import json, resource, sys
from ratchet_ray.suites.mbpp.sandbox import Sandbox, SandboxLimits
from ratchet_ray.suites.mbpp.session import grade_in_sandbox

frame_mb, cap_mb, kind = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
size = int(frame_mb * 2**20)
if kind == "string":
    code = f"def f(x):\n    return 'a' * {size}\n"
else:  # a forged frame: base test 1's answer, a wire text of nested empty lists
    code = ("import posix\n"
            "def f(x):\n"
            f"    inner = '[\"l\"' + ',[\"l\"]' * {size // 9} + ']'\n"
            "    body = ('{\"k\":\"out\",\"split\":\"base\",\"i\":0,\"v\":' + __import__('json').dumps(inner) + '}').encode()\n"
            "    del inner\n"
            "    for fd in range(3, 1024):\n"
            "        try:\n"
            "            posix.write(fd, len(body).to_bytes(4, 'big') + body)\n"
            "        except OSError:\n"
            "            pass\n"
            "    posix._exit(0)\n")
problem = {"entry_point": "f", "base_input": [[1]], "plus_input": [[1]], "atol": 0}
# generous limits: building and encoding a frame of hundreds of MiB is not what is measured
expected = {"base": ["b"], "plus": ["b"], "base_time": [30.0], "plus_time": [30.0],
            "base_bytes": [size], "plus_bytes": [size]}
limits = SandboxLimits(max_frame_mb=cap_mb, memory_mb=max(1024, int(frame_mb * 12)),
                       budget_s=300.0, startup_s=120.0)
sandbox = Sandbox(limits)
if sandbox.mode != "bwrap":
    raise SystemExit(f"no bubblewrap sandbox here: {sandbox.refusal or sandbox.description}")
warm = grade_in_sandbox(sandbox, problem, expected, "def f(x):\n    return 'b'\n", 120.0)
assert warm.passed, warm.trace
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
outcome = grade_in_sandbox(sandbox, problem, expected, code, 120.0)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"baseline_mib": before / 2**20, "peak_mib": peak / 2**20,
                  "growth_mib": (peak - before) / 2**20, "frame_mib": size / 2**20,
                  "ratio": (peak - before) / size, "exit_status": outcome.exit_status,
                  "passed": outcome.passed, "trace": outcome.trace[-1:]}))
'''


def measure(frame_mb: float, cap_mb: int, kind: str) -> dict:
    """One grade in a fresh process; its JSON line (see the module docstring)."""
    done = subprocess.run([sys.executable, "-c", CHILD, str(frame_mb), str(cap_mb), kind],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frame-mb", type=float, default=500.0)
    parser.add_argument("--cap-mb", type=int, default=512)
    parser.add_argument("--kind", choices=("string", "forged_lists", "both"), default="both")
    args = parser.parse_args()
    kinds = ("string", "forged_lists") if args.kind == "both" else (args.kind,)
    for kind in kinds:
        r = measure(args.frame_mb, args.cap_mb, kind)
        print(f"{kind:>13}: frame {r['frame_mib']:.0f} MiB, grader {r['baseline_mib']:.0f} -> "
              f"{r['peak_mib']:.0f} MiB (+{r['growth_mib']:.0f}), ratio {r['ratio']:.2f}; "
              f"{r['exit_status']} {r['trace']}")


if __name__ == "__main__":
    main()
