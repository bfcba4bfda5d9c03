"""The direct-LLM baseline as a Ray-job entry point: ``python -m jobs.baseline SUITE [options]``,
the same command as ``ratchet baseline`` (options, contracts and code:
``ratchet_ray/cli/baseline.py``).
"""

from ratchet_ray.cli.baseline import main

if __name__ == "__main__":
    main(prog_name="python -m jobs.baseline")
