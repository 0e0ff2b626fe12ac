"""Secrets never reach repr, explain(), logs or error messages: one redactor for all."""

from __future__ import annotations

import re
from typing import Any

_SECRET = re.compile(r"secret|token|password|passwd|credential|session|signature|"
                     r"(^|_)key$|key_?id$|access_?key|customer_?key|connection_?string|"
                     r"authorization", re.IGNORECASE)
_URL_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def redact(options: Any) -> Any:
    """Options with every secret-looking value replaced (keys named like key, key id,
    access key, customer key, secret, token, password, credential, session, signature,
    connection string, authorization, at any depth; credentials inside URLs), for repr,
    explain and errors."""
    if isinstance(options, dict):
        return {k: ("***" if _SECRET.search(str(k)) and v is not None else redact(v))
                for k, v in options.items()}
    if isinstance(options, list | tuple):
        return type(options)(redact(v) for v in options)
    if isinstance(options, str):
        return redact_url(options)
    return options


def redact_url(text: str) -> str:
    """``text`` with any ``user:password@`` part of a URL in it replaced by ``***@``."""
    return _URL_USERINFO.sub("***@", text)
