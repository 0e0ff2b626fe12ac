"""A griffe extension for the API pages: the docstrings' reST roles as Markdown code.

Docstrings here write ``:class:`~listing.scan.ScanPlan``` and ``double backticks`` (reST);
the API pages render Markdown, where the role would show as text. ``:role:`~a.b``` becomes
`` `b` `` and ``:role:`a.b``` becomes `` `a.b` ``.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``text`` with every reST role replaced by inline code."""
    return ROLE.sub(lambda m: f"`{m.group(2).rsplit('.', 1)[-1] if m.group(1) else m.group(2)}`",
                    text)


class StripRoles(griffe.Extension):
    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
