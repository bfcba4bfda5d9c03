"""What a run can be set to: the schema of ``LoopConfig`` and its sections. A pure schema that
knows no suite: building a run's config from files and flags, resolved through the registered
suites, is ``ratchet_ray.run_config``, above the suites."""
