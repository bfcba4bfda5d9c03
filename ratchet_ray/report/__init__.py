"""``ratchet report``: one self-contained HTML page per run, per set of seeds or per sweep, and
the other views of a finished run: ``ratchet plot`` and the MLflow tracking.

- ``data``: one run's numbers, read from its run dir (evidence through ``EvidenceStore``,
  ``loop.json``, ``stopped.json``, the bank's YAML files); ``ratchet plot`` draws from it too.
- ``capsules``: the capsule browser's rows; ``sweep``: several runs and a sweep's tables;
  ``ablation_report``: a sweep's ``ablations.md`` / ``ablations.json``.
- ``svg``: the charts as inline SVG strings (no chart library, no network).
- ``sections`` and ``html``: the page (sections, embedded JSON, ``assets``' style and script).
- ``plot``: ``ratchet plot RUN``, the learning curve as a PNG and the headline metrics as Markdown.
- ``tracking``: optional MLflow tracking of a run (params, per-round metrics, this report, the skills).
- ``inspect_export``: ``ratchet export --inspect``, a run as Inspect eval logs.
"""
