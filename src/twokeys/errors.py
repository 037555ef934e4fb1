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
