"""The anti-forgery layers inside one grading session (its modules: docs/architecture.md)."""
