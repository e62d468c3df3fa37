"""Keep credentials out of reports: command lines and mount options are redacted."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

MASK = "***"
_SECRET_KEY = re.compile(r"(key|secret|passw|pass(?![a-z])|token|credential|auth|signature)",
                         re.IGNORECASE)
_URL_USERINFO = re.compile(r"(\w[\w+.-]*://[^@\s:]*:)[^@\s]+@")
_LONG_SECRET = re.compile(r"^(?!/)(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9/+=]{32,}$")  # key-like blob
_KEY_PAIR = re.compile(r"^[A-Za-z0-9_-]{12,}:[A-Za-z0-9/+=_-]{12,}$")  # passwd_file content


# Secrets inside free text: bearer tokens, signed-URL query parameters (SAS sig=, S3
# X-Amz-Signature=, token=), and NAME=VALUE / NAME: VALUE where NAME looks secret.
_BEARER = re.compile(r"(?i)\b(bearer\s+)[^\s,;'\"]+")
_QUERY = re.compile(r"(?i)([?&;](?:sig|signature|x-amz-signature|x-amz-security-token|token|"
                    r"access_token|code)=)[^&\s'\"]+")
_NAMED = re.compile(r"(?i)\b([\w.-]*(?:passw|secret|token|credential|api[_-]?key|access[_-]?key)"
                    r"[\w.-]*\s*[=:]\s*)(?!\*\*\*)[^\s,;'\"]+")


def redact_text(text: str) -> str:
    """Mask what looks like a secret anywhere in free text (a daemon's log, an error)."""
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    text = _QUERY.sub(rf"\1{MASK}", text)
    return _NAMED.sub(rf"\1{MASK}", text)


def _value(text: str) -> str:
    text = _URL_USERINFO.sub(rf"\1{MASK}@", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    text = _QUERY.sub(rf"\1{MASK}", text)
    if _LONG_SECRET.match(text) or _KEY_PAIR.match(text):
        return MASK
    return text


def redact_options(text: str) -> str:
    """'a=1,secret_key=x' -> 'a=1,secret_key=***'."""
    parts = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        parts.append(f"{key}={MASK}" if eq and _SECRET_KEY.search(key) else (
            f"{key}{eq}{_value(value)}" if eq else _value(part)))
    return ",".join(parts)


def redact_args(args: Iterable[str]) -> list[str]:
    out: list[str] = []
    hide_next = False
    for arg in args:
        if hide_next:
            out.append(MASK)
            hide_next = False
        elif arg.startswith("-") and "=" not in arg and _SECRET_KEY.search(arg):
            out.append(arg)
            hide_next = True
        else:
            out.append(redact_options(arg))
    return out


def mask(data: Any, secrets: Iterable[str]) -> Any:
    """Replace each known secret value wherever it occurs in strings of nested data."""
    values = [v for v in secrets if v]
    if isinstance(data, str):
        for v in values:
            data = data.replace(v, MASK)
        return data
    if isinstance(data, dict):
        return {k: mask(v, values) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return type(data)(mask(v, values) for v in data)
    return data
