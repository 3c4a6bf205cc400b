"""How much a policy's actions depend on what it sees: two numbers from its evaluation episodes.

- **Top-string share**: the share of episodes that play the policy's single most common action string
  (the episode's actions as open-loop letters, ``harness_gym.policies.open_loop.LETTERS``). 1.0 means the
  policy is open-loop in practice: it plays one fixed string whatever the task and the feedback.
- **Verdict MI**: the mutual information, in bits, between the action a policy takes at a step and the
  last check verdict before that step, over every step of every episode (pooled). The verdict is read
  from the step records: a step that carries a ``check`` record (the report of a CHECK on a draft) gives
  ``fail`` if it raised a failure signal (``failure``: the check found at least one issue), else
  ``pass``; before the first such step it is ``none``. A later DRAFT or REVISE does not reset it. The
  verdict has three values, so the MI lies in [0, log2 3]. ``none`` holds only before the first check,
  so a fixed string that checks mid-episode has MI above 0 from position alone; ``mi_checked_bits`` is
  the MI over the steps after a check (pass versus fail only), which a fixed string leaves near 0.

The MI is the plug-in estimate (empirical frequencies put into the definition). It is biased upward for
small counts: about (K_va - K_v - K_a + 1) / (2 N ln 2) bits, with K the number of non-empty cells of the
joint and of each marginal and N the steps (Miller 1955; Panzeri & Treves 1996), reported beside it as
``mi_bias_bits``; an MI not well above it is indistinguishable from none.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

VERDICTS = ("none", "pass", "fail")
"""The last check verdict before a step: no check yet, the last check passed, the last check failed."""

Play = tuple[str, list[tuple[str, str]]]
"""One episode as the diagnostics need it: its action string and its (verdict, action letter) steps."""


def episode_play(step_records: Sequence[Mapping[str, Any]]) -> Play:
    """An episode's action string and, per step, the last check verdict before it and the action taken."""
    from harness_gym.core.actions import Action
    from harness_gym.policies.open_loop import LETTERS

    verdict = "none"
    pairs: list[tuple[str, str]] = []
    for step in step_records:
        letter = LETTERS[Action[step["action"]].value]
        pairs.append((verdict, letter))
        if "check" in step:
            verdict = "fail" if step["failure"] else "pass"
    return "".join(letter for _, letter in pairs), pairs


def _entropy(counts: Iterable[int], n: int) -> float:
    # summed in sorted order: the same bits whatever order the episodes arrived in (local or Ray)
    return -sum(c / n * math.log2(c / n) for c in sorted(counts) if c)


def mutual_information(pairs: Sequence[tuple[str, str]]) -> float:
    """Plug-in mutual information (bits) between the two members of ``pairs``; 0.0 for no pairs."""
    n = len(pairs)
    if not n:
        return 0.0
    joint = Counter(pairs)
    first = Counter(a for a, _ in pairs)
    second = Counter(b for _, b in pairs)
    mi = _entropy(first.values(), n) + _entropy(second.values(), n) - _entropy(joint.values(), n)
    return max(0.0, mi)  # rounding can leave -1e-16 where the two are independent


def plug_in_bias(pairs: Sequence[tuple[str, str]]) -> float:
    """The plug-in MI's first-order upward bias (Miller-Madow), in bits; 0.0 for no pairs."""
    n = len(pairs)
    if not n:
        return 0.0
    cells = len(set(pairs)) - len({a for a, _ in pairs}) - len({b for _, b in pairs}) + 1
    return max(0, cells) / (2 * n * math.log(2))


def policy_diagnostics(plays: Sequence[Play]) -> dict[str, Any]:
    """``episodes``, ``top_string`` and ``top_share`` (its share of the episodes), ``mi_bits`` between
    action and last verdict over ``steps`` steps with ``mi_bias_bits``, and ``mi_checked_bits`` over the
    ``checked_steps`` after a check."""
    if not plays:
        raise ValueError("no episodes to diagnose")
    strings = Counter(string for string, _ in plays)
    top, count = min(strings.items(), key=lambda item: (-item[1], item[0]))  # ties: the first string
    pairs = [pair for _, steps in plays for pair in steps]
    checked = [pair for pair in pairs if pair[0] != "none"]
    return {
        "episodes": len(plays),
        "top_string": top,
        "top_share": count / len(plays),
        "mi_bits": mutual_information(pairs),
        "mi_bias_bits": plug_in_bias(pairs),
        "steps": len(pairs),
        "mi_checked_bits": mutual_information(checked),
        "checked_steps": len(checked),
    }
