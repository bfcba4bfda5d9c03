"""Synthesis pre-processing (pure functions): pattern canonicalisation, clustering, cover guard."""
