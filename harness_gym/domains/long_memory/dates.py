"""How a long-memory task shows a session date: ISO (``2022-01-03``) or day-month-year (``3 Jan 2022``).

The task's ``date_style`` picks one; the generator writes prompts and the chat protocol renders sessions
with the same function, so the two never disagree.
"""

from __future__ import annotations

import datetime as dt


def show_date(iso: str, style: str) -> str:
    """``iso`` (a ``YYYY-MM-DD`` date) in ``style``: ``"iso"`` as is, anything else as ``3 Jan 2022``."""
    day = dt.date.fromisoformat(iso)
    return iso if style == "iso" else f"{day.day} {day.strftime('%b')} {day.year}"
