"""Where the shipped configs live: ``configs/`` (the default and suite files, the ablation arms,
the default meta-skills), whether the code runs from a checkout or from an installed wheel.

Contracts:
- ``configs_dir()`` is the installed copy ``ratchet_ray/configs`` when there is one (a wheel
  ships the repo's top-level ``configs/`` there as package data, see ``setup.py``), else the
  checkout's top-level ``configs/`` (a source tree or an editable install). The repo's
  ``configs/`` is the only source; nothing is copied by hand.
- A missing folder raises ``FileNotFoundError`` naming both places looked at and the fix.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_MARKER = "default.yaml"


def configs_dir() -> Path:
    """The ``configs`` folder (see module contracts)."""
    installed = Path(str(resources.files("ratchet_ray") / "configs"))
    checkout = Path(__file__).resolve().parents[2] / "configs"
    for candidate in (installed, checkout):
        if (candidate / _MARKER).is_file():
            return candidate
    raise FileNotFoundError(f"no configs folder at {installed} (installed package) or {checkout} "
                            "(source checkout); reinstall ratchet-ray or run from the repository")
