"""Repository tooling: the generated reference pages (``python -m tools.docs_gen``) and the
import graph the architecture tests and the architecture map read (``tools.import_graph``).

Not part of the shipped package: setup.py packages ``ratchet_ray``, ``actors`` and ``jobs`` only,
and no module of those imports ``tools`` (``tests/architecture/test_layers.py`` checks both).
Run from the repository root (``make docs``), where ``tools`` is importable.
"""
