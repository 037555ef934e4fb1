"""Error types. Every error a user can cause is a :class:`TwokeysError` with a clear message."""

from __future__ import annotations


class TwokeysError(Exception):
    """Base class: the CLI prints these as one line, without a traceback."""


class ConfigError(TwokeysError):
    """A bad parameter or configuration value; the message names the field."""


class IngestError(TwokeysError):
    """A source file or record could not be read; the message names the file (and line)."""


class IndexFormatError(TwokeysError):
    """An index directory is missing, corrupt, or of an unsupported format version."""


class IndexWriteError(TwokeysError):
    """An index could not be written (disk full, read-only, no permission); names path and cause."""


class EncoderMismatchError(TwokeysError):
    """The index was built with a different encoder than the one requested."""


class MissingExtraError(TwokeysError):
    """An optional dependency is not installed; the message gives the install command."""


class QuerySyntaxError(TwokeysError):
    """A query in a structured syntax (``--mode boolean``) is malformed; names the column."""


class AuthError(TwokeysError):
    """A server refused the API key (HTTP 401/403); the message says how to send one."""


class NotFoundError(TwokeysError):
    """A server has no such document or route (HTTP 404); the message names it."""


class ServiceUnavailable(TwokeysError):
    """A server could not be reached, timed out, or stayed busy (429/503) on every attempt."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status
