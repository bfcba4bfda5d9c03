"""The ablation sweep as a Ray-job entry point: ``python -m jobs.ablations SUITE [options]``,
the same command as ``ratchet ablations`` (options, contracts and code:
``ratchet_ray/cli/ablations.py``).
"""

from ratchet_ray.cli.ablations import main

if __name__ == "__main__":
    main(prog_name="python -m jobs.ablations")
