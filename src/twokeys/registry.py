"""Backends named by import path, loaded on first use.

A registry (encoders, rerankers, LLM providers, classic retrievers) maps a name to a
factory given either as a callable or as ``"package.module:attribute"``. A path is only
imported when the name is first asked for, so naming a backend costs nothing at import
time (a bm25 search never loads onnxruntime) and the module that holds the registry
never imports its backends, which import it (no import cycle).
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from typing import Any

Target = str | Callable[..., Any]


def resolve(target: Target) -> Callable[..., Any]:
    """The callable ``target`` names: itself, or ``attribute`` of ``package.module``
    imported now (an import error, e.g. a missing extra, is raised as it is)."""
    if not isinstance(target, str):
        return target
    module, sep, attribute = target.partition(":")
    if not sep or not module or not attribute:
        raise ValueError(f"registry: {target!r} is not 'package.module:attribute'")
    found: Callable[..., Any] = getattr(import_module(module), attribute)
    return found
