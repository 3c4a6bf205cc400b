"""Task features of a planning problem, read off its prompt text (``harness_gym.envs.features``)."""

from __future__ import annotations

from harness_gym.envs.features import flag, line_after, scaled, section

TASK_FEATURES = (
    ("logistics", "1 for a logistics problem, 0 for blocks world"),
    ("objects", "blocks, or trucks and packages (scaled, cap 10)"),
    ("goals", "goal conditions (scaled, cap 8)"),
    ("constraints", "extra constraints (scaled, cap 3)"),
    ("roads", "roads of a logistics map (scaled, cap 10; 0 in blocks world)"),
)

COMPONENTS = {
    "empty": "form",
    "format": "form",
    "illegal_step": "content",
    "constraint": "content",
    "goal_unmet": "content",
}


def task_features(text: str) -> tuple[float, ...]:
    logistics = "logistics planning problem" in text
    if logistics:
        objects = len(section(text, "Trucks:")) + len(section(text, "Packages"))
    else:
        objects = len([b for b in line_after(text, "Blocks:").rstrip(".").split(",") if b.strip()])
    return (
        flag(logistics),
        scaled(objects, 10),
        scaled(len(section(text, "Goal")), 8),
        scaled(len(section(text, "Extra constraints")), 3),
        scaled(len(section(text, "Roads")), 10),
    )
