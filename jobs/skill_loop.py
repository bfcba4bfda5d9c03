"""The skill loop job: ``python -m jobs.skill_loop SUITE [options]``, the same command as
``ratchet run`` (see ``ratchet_ray/cli/run.py`` for the options and ``ratchet_ray/loop`` for the
loop). Locally it starts Ray on 127.0.0.1; on a cluster submit it with
``ray job submit --working-dir . -- python -m jobs.skill_loop mbpp ...``.
"""

from ratchet_ray.cli.run import run

if __name__ == "__main__":
    run(prog_name="python -m jobs.skill_loop")
