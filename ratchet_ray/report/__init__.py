"""``ratchet report``: one self-contained HTML page per run, per set of seeds or per sweep.

- ``data``: what the page shows, read from run dirs (evidence through ``EvidenceStore``,
  ``loop.json``, ``stopped.json``, the bank's YAML files); ``ratchet plot`` draws from it too.
- ``svg``: the charts as inline SVG strings (no chart library, no network).
- ``html``: the page (sections, embedded JSON, the small script of ``report.js``).
"""
