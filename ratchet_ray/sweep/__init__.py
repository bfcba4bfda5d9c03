"""Ablation sweeps: every (arm, seed) of a sweep as its own ``python -m jobs.skill_loop`` Ray job.

The plan and each child's config, validated before anything runs (``spec``); the sweep folder's
layout and records (``folder``); the arm-seeds' Ray jobs (``jobs``); a Ray head on 127.0.0.1 for
the length of a sweep, when no cluster is given (``ray_head``). Layer: above ``ratchet_ray.loop``
(a child's config is checked as the loop's entry checks it), below the CLI.
"""
