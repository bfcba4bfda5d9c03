"""A run's ``LoopConfig`` built from what a person gives: YAML files layered with ``key.sub=value``
overrides (``files``: ``load_config``, ``dump_config``) and the overrides that the run flags stand for
(``flags``) with the click options that set them (``options``), resolved through the registered suites (``ratchet_ray.suites.resolve``).

Above the suites, so apart from the schema (``ratchet_ray.settings``), which the suites import."""
