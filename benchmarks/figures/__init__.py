"""Benchmark areas: each module exposes ``collect(mode: str) -> list[Figure]``."""
