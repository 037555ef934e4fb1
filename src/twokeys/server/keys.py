"""API keys with roles: read-only or read-write, read from a file or the environment.

A keys file (or the ``TWOKEYS_API_KEYS`` variable) holds one key a line as
``name:role:key``; ``role`` is ``read`` (search, ask, read documents) or ``write``
(also add, replace and delete documents); blank lines and ``#`` comments are skipped.
The name is what the access log and the metrics show; the key itself is never shown.
Keys never come from the command line, where ``ps`` would show them to every user.
A key is matched in constant time against every configured key (no early exit).
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from twokeys.errors import ConfigError

Role = Literal["read", "write"]
READ: Role = "read"
WRITE: Role = "write"
MIN_KEY_CHARS = 16
ENV_KEYS = "TWOKEYS_API_KEYS"  # the keys themselves, in the keys file's format
_ROLES: dict[str, Role] = {
    "read": READ,
    "ro": READ,
    "read-only": READ,
    "write": WRITE,
    "rw": WRITE,
    "read-write": WRITE,
}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


@dataclass(frozen=True)
class ApiKey:
    """One key: its name (shown in logs), its role, and the secret (never shown)."""

    name: str
    role: Role
    secret: str = field(repr=False)

    @property
    def can_write(self) -> bool:
        return self.role == WRITE


ANONYMOUS = ApiKey("-", WRITE, "")  # every request of a server without keys


def parse_keys(text: str, source: str) -> tuple[ApiKey, ...]:
    """The keys ``text`` holds (``name:role:key`` lines); an error names ``source`` and
    the line (never the key)."""
    keys: list[ApiKey] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        where = f"{source} line {number}"
        parts = line.split(":", 2)
        if len(parts) != 3:
            raise ConfigError(f"{where}: expected name:role:key")
        name, role, secret = (p.strip() for p in parts)
        if not _NAME.fullmatch(name):
            raise ConfigError(f"{where}: name {name!r}: use letters, digits, '.', '_', '-'")
        if role.lower() not in _ROLES:
            raise ConfigError(f"{where}: role {role!r}: use read or write")
        if len(secret) < MIN_KEY_CHARS:
            raise ConfigError(f"{where}: the key must be at least {MIN_KEY_CHARS} characters")
        keys.append(ApiKey(name, _ROLES[role.lower()], secret))
    return check_unique(keys)


def check_unique(keys: Iterable[ApiKey]) -> tuple[ApiKey, ...]:
    """``keys``, refused when two share a name or a secret."""
    keys = tuple(keys)
    names = [k.name for k in keys]
    for name in names:
        if names.count(name) > 1:
            raise ConfigError(f"key {name!r}: named twice")
    secrets = [k.secret for k in keys]
    for k in keys:
        if secrets.count(k.secret) > 1:
            raise ConfigError(f"key {k.name!r}: its key is also another key's")
    return keys


def read_keys_file(path: Path) -> tuple[ApiKey, ...]:
    """The keys in ``path`` (see the module docstring)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--keys-file {path}: unreadable ({exc})") from exc
    keys = parse_keys(text, f"--keys-file {path}")
    if not keys:
        raise ConfigError(f"--keys-file {path}: holds no key")
    return keys


class KeyRing:
    """The configured keys, matched in constant time."""

    def __init__(self, keys: Sequence[ApiKey]) -> None:
        self.keys = check_unique(keys)

    def __bool__(self) -> bool:
        return bool(self.keys)

    @property
    def can_write(self) -> bool:
        """Whether any key may write."""
        return any(k.can_write for k in self.keys)

    def match(self, given: str) -> ApiKey | None:
        """The key whose secret is ``given``, or None; compares with every key."""
        found = None
        data = given.encode()
        for key in self.keys:
            if hmac.compare_digest(data, key.secret.encode()):
                found = key
        return found
