"""Moved to :mod:`twokeys.pagecache` (the vector kernels use it and import nothing from
storage); kept so that existing imports keep working."""

from twokeys.pagecache import read_ahead, read_ahead_in_background

__all__ = ["read_ahead", "read_ahead_in_background"]
