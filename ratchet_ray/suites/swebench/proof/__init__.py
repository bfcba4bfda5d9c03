"""A resolution proven by sessions the patch cannot tell apart, and the impossible twins (its
modules: docs/architecture.md)."""
