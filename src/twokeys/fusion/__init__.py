"""Rank fusion: pure functions from several ranked runs to one."""

from twokeys.fusion.rrf import rrf

__all__ = ["rrf"]
