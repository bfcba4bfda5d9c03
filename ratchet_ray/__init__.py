"""ratchet-ray: the Ratchet self-evolving skill loop, distributed on Ray."""

__version__ = "0.1.0"
