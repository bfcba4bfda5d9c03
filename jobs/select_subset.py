"""Hard-subset selection as a Ray-job entry point: ``python -m jobs.select_subset SUITE [options]``,
the same command as ``ratchet select-subset`` (options, contracts, code:
``ratchet_ray/cli/select_subset.py``).
"""

from ratchet_ray.cli.select_subset import main

if __name__ == "__main__":
    main(prog_name="python -m jobs.select_subset")
