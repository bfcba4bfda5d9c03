"""The skill loop: run dir, per-round phases, resume and progress (the driver of ``jobs.skill_loop``).

- ``driver``: ``run_loop`` and ``ROUND_PHASES`` (eval -> rollback -> train -> critic -> metasynth
  -> synth -> curate -> snapshot); ``phases``: one function per phase.
- ``execute``: one split of one round through the Solver and Grader pools into capsules.
- ``runtime``: Ray connection, the run's actors and their resources; ``Models`` (the LLM/embedder
  injection point); ``session``: ``RunRuntime``, the one context that starts and releases them
  (used by the loop, the baseline job, the sweep and the experiment evaluator).
- ``rundir``: the run directory's files; ``stops``: a stop or interrupt recorded in it;
  ``progress``: the terminal display.
"""
