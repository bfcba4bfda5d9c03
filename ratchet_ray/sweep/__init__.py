"""Ablation sweeps: every (arm, seed) of a sweep as its own ``python -m jobs.skill_loop`` Ray job.

- ``spec``: the sweep's shared flags and budget, the plan (new, resumed or finished
  arm-seeds) and each child's config, validated before anything runs.
- ``folder``: the sweep folder's layout and records (``sweep.json``, its writer lock,
  ``status.json``, the spend its finished runs recorded).
- ``jobs``: submitting, watching, retrying and stopping the arm-seeds' Ray jobs.
- ``ray_head``: a Ray head on 127.0.0.1 for the length of a sweep, when no cluster is given.

Layer: above ``ratchet_ray.loop`` (a child's config is checked as the loop's entry checks it),
below the CLI (``ratchet ablations`` / ``python -m jobs.ablations``).
"""
