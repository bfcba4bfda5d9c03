"""What a run can be set to: the schema of ``LoopConfig`` and its sections (``schema``), the LLM
backends' settings with their environment defaults (``backends``), the role prompt templates a run
may override (``prompt_templates``) and where the shipped config files live (``resources``).

A pure schema that knows no suite: building a run's config from files and flags, resolved
through the registered suites, is ``ratchet_ray.run_config``, above the suites."""
