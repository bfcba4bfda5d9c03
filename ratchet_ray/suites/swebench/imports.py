"""One lock for this package's lazy imports of docker-py and swebench.

Both packages' modules import each other in cycles (``docker.models.containers`` with
``docker.models.images``; ``swebench.harness.constants`` with its siblings), and a grader imports
them lazily from several threads at once: its warm-up thread imports swebench's harness while
the actor's own thread reaps, grades or classifies an error. Two threads inside one cycle make
Python raise ``_DeadlockError`` (CI met it in a reap; two threads importing ``docker`` and
``swebench.harness.grading`` together meet it nearly every time). So every function-level import
of either package here is written under ``with serial_imports:``, which
``tests/architecture/test_serial_imports.py`` holds; once a module is loaded its import costs an
uncontended lock. Re-entrant, because one such import may run code that takes it again.
"""
from __future__ import annotations

import threading

serial_imports = threading.RLock()
