"""Where twokeys keeps what it can rebuild: ``$TWOKEYS_CACHE``, else
``$XDG_CACHE_HOME/twokeys``, else ``~/.cache/twokeys``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def cache_home(env: Mapping[str, str] | None = None) -> Path:
    """The user's twokeys cache folder (not created here)."""
    env = os.environ if env is None else env
    if env.get("TWOKEYS_CACHE"):
        return Path(env["TWOKEYS_CACHE"]).expanduser()
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "twokeys"
