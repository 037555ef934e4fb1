"""``twokeys serve``: the index over HTTP (needs ``pip install 'twokeys[serve]'``).

:func:`create_app` builds the FastAPI app over an :class:`IndexService`; the command
line (:mod:`twokeys.server.cli`) runs it with uvicorn.
"""

from __future__ import annotations

from twokeys.server.config import Limits, ServerConfig
from twokeys.server.service import IndexService


def create_app(*args: object, **kwargs: object) -> object:
    """:func:`twokeys.server.app.create_app` (imported on use: FastAPI is an extra)."""
    from twokeys.server.app import create_app as create

    return create(*args, **kwargs)  # type: ignore[arg-type]


__all__ = ["IndexService", "Limits", "ServerConfig", "create_app"]
