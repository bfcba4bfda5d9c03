"""The skill loop job: ``python -m jobs.skill_loop SUITE [options]``, the same command as
``ratchet run`` (see ``ratchet_ray/cli/run.py`` for the options and ``ratchet_ray/loop`` for the
loop). Locally it starts Ray on 127.0.0.1; on a cluster submit it with
``ray job submit --working-dir . -- python -m jobs.skill_loop mbpp ...``.
"""

import signal

from ratchet_ray.cli.run import run

if __name__ == "__main__":
    # Stopping a Ray job sends SIGINT. A process started in the background of a non-interactive
    # shell (a head or job launched with `&`, as CI and many cluster scripts do) inherits SIGINT
    # ignored, and Python then never turns it into KeyboardInterrupt: the run would sit out the
    # stop's grace period and be SIGKILLed instead of unwinding (stopped.json, lease, servers).
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    run(prog_name="python -m jobs.skill_loop")
