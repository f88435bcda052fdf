"""Keep secrets out of trajectories and error messages.

Header values are replaced wholesale (except a few harmless ones); any secret value (read
from the environment, a credential header, the tool server's token) is replaced wherever
it appears in a recorded string. Long strings are cut so a trajectory stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
_PUBLIC_HEADERS = frozenset(
    {"content-type", "accept", "user-agent", "content-length", "retry-after", "date"}
)


class Redactor:
    def __init__(self, secrets: Iterable[str] = (), max_chars: int = 20000) -> None:
        self._secrets = sorted({s for s in secrets if s and len(s) >= 4}, key=len, reverse=True)
        self.max_chars = max_chars

    def add(self, secret: str) -> None:
        if secret and len(secret) >= 4 and secret not in self._secrets:
            self._secrets.append(secret)
            self._secrets.sort(key=len, reverse=True)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        return value

    def value(self, obj: Any) -> Any:
        """A redacted deep copy of a JSON-like value, long strings truncated."""
        if isinstance(obj, str):
            return self.truncate(self.text(obj), self.max_chars)
        if isinstance(obj, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        return {
            k: (self.text(v) if k.lower() in _PUBLIC_HEADERS else MASK) for k, v in headers.items()
        }

    @staticmethod
    def truncate(text: str, limit: int) -> str:
        if len(text) <= limit:
            return text
        return text[:limit] + f"... [{len(text) - limit} more chars]"
