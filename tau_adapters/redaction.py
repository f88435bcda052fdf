"""Keep secrets out of result files, trajectories, error messages and API answers.

One module, in the SDK, so that the runner, the service and every adapter redact the same
way. Three tools, for three situations:

- structured options (`redact_secrets`): the value of every secret-looking key, at any
  depth, becomes a stable short fingerprint (`<redacted sha256:0123456789abcdef>`):
  comparable across runs (resume checks it), useless as the secret. A value that is
  already a fingerprint is kept as is, so redacting twice changes nothing;
- known secret values (`mask_values`, `Redactor`): every occurrence inside any string is
  replaced by a mask, wherever it found its way (an error text, a recorded payload);
- free text from elsewhere (`redact_text`): known values, secret-looking environment
  variables and the common shapes of API keys and tokens are masked.

Depends on nothing but the standard library.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

MASK = "***"
"""What a masked secret inside a string becomes."""

MIN_SECRET_LENGTH = 4
"""Shorter known values are not masked: they would mask ordinary words."""

MIN_ENV_SECRET_LENGTH = 6
"""Environment values shorter than this (flags such as `True`) are not treated as secrets."""

SECRET_KEY_HINTS = ("key", "token", "secret", "password", "passwd", "authorization", "bearer")
"""A key whose lower-cased name contains one of these holds a secret."""

_FINGERPRINT = re.compile(r"<redacted sha256:[0-9a-f]{16}>")
_SECRET_ENV_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|CREDENTIALS?)$", re.IGNORECASE)
_SECRET_SHAPES = (
    re.compile(r"sk-[A-Za-z0-9_\-]{6,}"),
    re.compile(r"AIza[0-9A-Za-z_\-]{10,}"),
    re.compile(r"ya29\.[0-9A-Za-z_\-.]+"),
    re.compile(r"(?i)(bearer\s+)[^\s'\",]+"),
    re.compile(r"(?i)([?&](?:key|api_key|access_token)=)[^&\s'\"]+"),
    re.compile(r"(?i)((?:x-api-key|x-goog-api-key|api[_-]?key)[\"']?\s*[:=]\s*[\"']?)[^\s'\",}]+"),
    re.compile(r"(?i)(\b[a-z][a-z0-9+.\-]*://[^\s/@:'\"]*:)[^\s/@'\"]+(?=@)"),  # URL password
)
_PUBLIC_HEADERS = frozenset(
    {"content-type", "accept", "user-agent", "content-length", "retry-after", "date"}
)


# ---------------------------------------------------------------------- structured values


def is_secret_key(key: str) -> bool:
    """Whether a mapping key names a secret (`api_key`, `Authorization`, `db_password`...)."""
    lowered = key.lower()
    return any(hint in lowered for hint in SECRET_KEY_HINTS)


def is_redacted(value: Any) -> bool:
    """Whether `value` is a fingerprint made by `fingerprint`."""
    return isinstance(value, str) and _FINGERPRINT.fullmatch(value) is not None


def fingerprint(value: Any) -> str:
    """A stable short stand-in for a secret; a fingerprint is returned unchanged."""
    if is_redacted(value):
        return str(value)
    digest = hashlib.sha256(str(value).encode("utf-8")).hexdigest()[:16]
    return f"<redacted sha256:{digest}>"


def redact_secrets(value: Any) -> Any:
    """A copy of a JSON-like value with every secret-looking key's value fingerprinted, at
    any depth (None stays None: an unset secret is not a secret), and the secrets inside
    strings too (`redact_string`). Idempotent."""
    if isinstance(value, Mapping):
        return {
            k: fingerprint(v) if v is not None and is_secret_key(str(k)) else redact_secrets(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_secrets(v) for v in value]
    if isinstance(value, str):
        return redact_string(value)
    return value


_KEY_VALUE = re.compile(r"([A-Za-z_][\w.-]*)([ \t]*[=:][ \t]*)([^\n]+)")


def redact_string(text: str) -> str:
    """`text` with the secrets a setting's string may carry fingerprinted: the password of
    a URL (`https://user:PASS@host`), a URL's query parameters with secret-looking names
    (`?api-key=...`), and the value of a `KEY=VALUE` string with a secret-looking KEY (a
    `--session-param api_token=...`). Anything else is returned as it is."""
    match = _KEY_VALUE.fullmatch(text)
    if match and "/" not in match.group(1) and is_secret_key(match.group(1)):
        return f"{match.group(1)}{match.group(2)}{fingerprint(match.group(3))}"
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
        password = parts.password
    except ValueError:
        return text
    netloc = parts.netloc
    if password:
        user, _, host = netloc.rpartition("@")
        name = user.split(":", 1)[0]
        netloc = f"{name}:{fingerprint(password)}@{host}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(is_secret_key(k) for k, _ in pairs):
            query = "&".join(
                f"{quote(k, safe='')}={fingerprint(v) if is_secret_key(k) else quote(v, safe='')}"
                for k, v in pairs
            )
    if netloc == parts.netloc and query == parts.query:
        return text
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def secret_values(value: Any, *, under_secret: bool = False) -> set[str]:
    """Every string stored under a secret-looking key, at any depth (fingerprints and
    values too short to mask left out): the values to mask wherever they reappear."""
    found: set[str] = set()
    if isinstance(value, Mapping):
        for key, item in value.items():
            found |= secret_values(item, under_secret=under_secret or is_secret_key(str(key)))
    elif isinstance(value, list | tuple):
        for item in value:
            found |= secret_values(item, under_secret=under_secret)
    elif under_secret and value is not None and not is_redacted(value):
        text = str(value)
        if len(text) >= MIN_SECRET_LENGTH:
            found.add(text)
    return found


# ---------------------------------------------------------------------- known values in text


def _ordered(secrets: Iterable[str | None], min_length: int = MIN_SECRET_LENGTH) -> list[str]:
    """Distinct usable secrets, longest first (a secret containing another is masked whole)."""
    return sorted({s for s in secrets if s and len(s) >= min_length}, key=len, reverse=True)


def _mask_text(text: str, ordered: Sequence[str], mask: str) -> str:
    for secret in ordered:
        if secret in text:
            text = text.replace(secret, mask)
    return text


def mask_values(value: Any, secrets: Iterable[str | None], *, mask: str = MASK) -> Any:
    """A copy of a JSON-like value (or a string) with every occurrence of a secret masked in
    every string, keys included, at any depth."""
    ordered = _ordered(secrets)
    if not ordered:
        return value

    def walk(item: Any) -> Any:
        if isinstance(item, str):
            return _mask_text(item, ordered, mask)
        if isinstance(item, Mapping):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value)


# Escaping is followed to a bounded depth (JSON inside JSON inside JSON..., a URL encoded
# twice...): an unbounded run would make a long run of backslashes quadratic to scan.
_JSON_SHORT_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "\b": "b",
    "\f": "f",
    "\n": "n",
    "\r": "r",
    "\t": "t",
}


def _any_case(hex_digits: str) -> str:
    return "".join(f"[{c.lower()}{c.upper()}]" if c.isalpha() else c for c in hex_digits)


def _char_spellings(char: str) -> str:
    """A regex for one character as it appears literally, JSON-escaped (`\\/`, `\\n`,
    `\\u00e9`, a surrogate pair; escaped again when JSON sits inside a JSON string) or
    percent-encoded (`%2F`, `%C3%A9`, `%252F` when encoded twice, `+` for a space)."""
    units = char.encode("utf-16-be", errors="surrogatepass")
    options = [
        "".join(r"\\{1,15}u" + _any_case(units[i : i + 2].hex()) for i in range(0, len(units), 2))
    ]
    if char == "\\":
        options.append(r"(?:\\\\){1,8}")  # `\\`, `\\\\` once escaped again: pairs
    elif char in _JSON_SHORT_ESCAPES:
        options.append(r"\\{1,15}" + re.escape(_JSON_SHORT_ESCAPES[char]))
    utf8 = char.encode("utf-8", errors="surrogatepass")
    options.append("".join("%(?:25){0,3}" + _any_case(f"{b:02X}") for b in utf8))
    if char == " ":
        options.append(r"\+")
    options.append(re.escape(char))  # last: an escaped spelling is masked whole
    return "(?:" + "|".join(options) + ")"


_PATTERNS: dict[str, re.Pattern[str]] = {}


def _encoded_pattern(secret: str) -> re.Pattern[str]:
    pattern = _PATTERNS.get(secret)
    if pattern is None:
        if len(_PATTERNS) >= 256:
            _PATTERNS.clear()
        pattern = _PATTERNS[secret] = re.compile("".join(_char_spellings(c) for c in secret))
    return pattern


def mask_encoded(text: str, secrets: Iterable[str | None], *, mask: str = MASK) -> str:
    """`text` with every known secret masked, also where it is spelled the way a JSON
    encoder or a URL encoder writes it: `sekrit\\/tok` (PHP and others escape `/`), any
    character as `\\uXXXX` (either case; `ensure_ascii`, Go's `\\u003c`), short escapes
    (`\\"`, `\\\\`, `\\n`), the same escaped again (JSON inside a JSON string),
    `%2F`/`%2f` percent-encoding (also twice, `%252F`) and `+` for a space, characters
    mixed freely. For text a peer produced (an error body, a reply quoted as is), where
    `Redactor.text`'s plain substring match would miss an echoed secret."""
    ordered = _ordered(secrets)
    text = _mask_text(text, ordered, mask)
    if not ordered or not any(c in text for c in "\\%+"):
        return text  # every encoded spelling needs one of these
    for secret in ordered:
        text = _encoded_pattern(secret).sub(lambda _: mask, text)
    return text


def environment_secrets(environ: Mapping[str, str] | None = None) -> list[str]:
    """Values of environment variables whose names end in KEY, TOKEN, SECRET, PASSWORD or
    CREDENTIALS (the usual homes of API keys)."""
    env = os.environ if environ is None else environ
    return [
        v for k, v in env.items() if _SECRET_ENV_NAME.search(k) and len(v) >= MIN_ENV_SECRET_LENGTH
    ]


def redact_text(text: str, secrets: Iterable[str | None] = (), *, mask: str = MASK) -> str:
    """`text` with known secrets, secret environment values and anything shaped like an API
    key or token (`sk-...`, `AIza...`, `Bearer ...`, `?key=...`, `api_key: ...`, the
    password of a URL such as a proxy's `http://user:PASS@host`) masked."""
    text = _mask_text(text, _ordered([*secrets, *environment_secrets()]), mask)
    for pattern in _SECRET_SHAPES:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + mask, text)
    return text


def truncate(text: str, limit: int) -> str:
    """`text` cut to `limit` characters, saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more chars]"


class Redactor:
    """The secrets of one adapter run (config values, tokens learnt on the way), applied to
    everything it records: texts, JSON payloads (long strings cut), HTTP headers."""

    def __init__(self, secrets: Iterable[str] = (), max_chars: int = 20000) -> None:
        self._secrets = _ordered(secrets)
        self.max_chars = max_chars

    @property
    def secrets(self) -> list[str]:
        """The values masked so far (longest first): to mask them in other outputs too."""
        return list(self._secrets)

    def add(self, secret: str) -> None:
        """Mask `secret` too from now on (a session token the agent handed out)."""
        if secret and len(secret) >= MIN_SECRET_LENGTH and secret not in self._secrets:
            self._secrets = _ordered([*self._secrets, secret])

    def text(self, value: str) -> str:
        return _mask_text(value, self._secrets, MASK)

    def value(self, obj: Any) -> Any:
        """A redacted deep copy of a JSON-like value, long strings truncated."""
        if isinstance(obj, str):
            return truncate(self.text(obj), self.max_chars)
        if isinstance(obj, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in obj.items()}
        if isinstance(obj, list | tuple):
            return [self.value(v) for v in obj]
        return obj

    def headers(self, headers: Mapping[str, str]) -> dict[str, str]:
        """Header values masked wholesale, except a few that never carry credentials."""
        return {
            k: (self.text(v) if k.lower() in _PUBLIC_HEADERS else MASK) for k, v in headers.items()
        }

    truncate = staticmethod(truncate)
