"""Secrets never reach repr, explain(), logs or error messages: one redactor for all."""

from __future__ import annotations

import logging
import re
from typing import Any

_SECRET = re.compile(r"secret|token|password|passwd|credential|session|signature|"
                     r"(^|_)key$|key_?id$|access_?key|customer_?key|connection_?string|"
                     r"authorization", re.IGNORECASE)
#: a URL's ``user[:password]@``, except Azure's ``container@account.dfs|blob.core…``
#: (a container name, no credential: see listing.url)
_URL_USERINFO = re.compile(
    r"(?<=://)(?![a-z0-9][a-z0-9-]{1,62}@[a-z0-9]{3,24}\.(?:dfs|blob)\.core\.)[^/@\s]+@")


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
    """``text`` with any ``user:password@`` part of a URL in it replaced by ``***@``
    (an Azure container, ``abfss://container@account.dfs.core.windows.net``, is kept)."""
    return _URL_USERINFO.sub("***@", text)


def secret_values(options: Any) -> tuple[str, ...]:
    """Values of the secret-looking options (as :func:`redact` decides), to scrub from
    messages that quote a client's error text."""
    found: list[str] = []

    def walk(value: Any, hidden: Any) -> None:
        if isinstance(value, dict) and isinstance(hidden, dict):
            for k, v in value.items():
                walk(v, hidden.get(k))
        elif hidden == "***" and value is not None and value != "***" and len(str(value)) >= 4:
            found.append(str(value))

    walk(options, redact(options))
    return tuple(found)


def scrub(text: str, secrets: Any = ()) -> str:
    """One line, with URL credentials and the given secret values (or those of an options
    dict) replaced."""
    values = secret_values(secrets) if isinstance(secrets, dict) else tuple(secrets)
    text = redact_url(" ".join(str(text).split()))
    for value in values:
        text = text.replace(value, "***")
    return text


#: what a masked secret reads as (Spark's own mask)
MASK = "*********(redacted)"


class SecretFilter(logging.Filter):
    """A logging filter that masks secrets in every record it sees: each match of
    ``pattern``'s last group (the value; the groups before it, a name and a separator,
    are kept) is replaced by :data:`MASK`. Records pass on, masked; the message is
    formatted once, and only a record that held a secret is changed."""

    def __init__(self, pattern: str) -> None:
        super().__init__()
        self.pattern = re.compile(pattern)

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken record is logging's to report
            return True
        masked = self.pattern.sub(lambda m: m.group(0)[:m.start(m.lastindex or 0)
                                                        - m.start(0)] + MASK, text)
        if masked != text:
            record.msg, record.args = masked, None
        return True
