"""``ratchet report``: one self-contained HTML page per run, per set of seeds or per sweep
(``html``: ``sections`` and ``svg`` over ``data``, ``sweep`` and ``capsules``), a sweep's
``ablations.md`` (``ablation_report``), and the other views of a run: ``ratchet plot``
(``plot``), ``ratchet export`` (``inspect_export``, ``predictions``), MLflow tracking
(``tracking``) and OpenTelemetry traces (``otel``).
"""
