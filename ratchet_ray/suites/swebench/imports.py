"""One lock for this package's lazy imports of docker-py and swebench.

Both packages' modules import each other in cycles, and a grader imports them lazily from
several threads at once (its warm-up thread and the actor's own); two threads inside one cycle
make Python raise ``_DeadlockError`` (CI met it in a reap). So every function-level import of
either package here is written under ``with serial_imports:`` (held by
``tests/architecture/test_serial_imports.py``); once loaded, an import costs an uncontended lock.
Re-entrant: one such import may run code that takes it again. ``docker_errors()`` is that
import of ``docker.errors``.
"""
from __future__ import annotations

import threading
from types import ModuleType

serial_imports = threading.RLock()


def docker_errors() -> ModuleType:
    """``docker.errors``, imported under ``serial_imports``."""
    with serial_imports:
        import docker.errors

    return docker.errors
