"""Lifecycle rules as pure functions: curator (retirement, eviction order) and the rollback gate."""
