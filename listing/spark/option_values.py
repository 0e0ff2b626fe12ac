"""Option values as Spark passes them (strings): the shared decoding of reads and writes."""

from __future__ import annotations

import json
from typing import Any

from listing.errors import OptionError


def json_object(name: str, value: str) -> dict[str, Any]:
    """An option holding a JSON object (``storage_options``), or an error naming it."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as err:
        raise OptionError(f"option {name} must be a JSON object: {err}") from None
    if not isinstance(parsed, dict):
        raise OptionError(f"option {name} must be a JSON object")
    return parsed


def storage_value(value: str) -> Any:
    """Storage options arrive as strings; JSON objects, booleans and numbers are decoded."""
    text = value.strip()
    if text[:1] in "{[" or text in ("true", "false", "null"):
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            return value
    return value
