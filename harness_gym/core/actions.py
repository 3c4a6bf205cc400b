"""The seven structural harness operations: the whole action space of every environment."""

from __future__ import annotations

from enum import IntEnum


class Action(IntEnum):
    """Harness operations, in the fixed order used by ``Discrete(7)`` and the action mask."""

    OBSERVE = 0
    RETRIEVE = 1
    CALL_TOOL = 2
    DRAFT = 3
    CHECK = 4
    REVISE = 5
    SUBMIT = 6


N_ACTIONS = len(Action)
