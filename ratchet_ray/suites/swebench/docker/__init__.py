"""Docker infrastructure of the SWE-bench suite (its modules: docs/architecture.md)."""
