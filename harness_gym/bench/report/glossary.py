"""The report's glossary: every abbreviation, policy name and column heading it uses, in one list.

The open-loop letters come from ``harness_gym.policies.open_loop.LETTERS`` and the events from the first
docstring line of their detectors (``harness_gym.core.hms.DETECTORS``), so neither is written twice.
"""

from __future__ import annotations

TERMS: dict[str, str] = {
    "G": "an episode's final quality in [0, 1] under the hidden verifier; mean G averages episodes.",
    "ΔG": "a policy's mean G minus Base's on the same episodes (paired); pp: percentage points of G.",
    "Base": "`base`, the domain's fixed script, which never CHECKs (the paper's Base harness).",
    "AW": "advantage-weighted regression of the buffer's actions (`awr`): the paper's learner, "
    "trained for the paper's 20 epochs; `awr-converged` trains the same objective for the shared "
    "gradient-step budget (`baselines.budgets`).",
    "BC": "behaviour cloning of the buffer (`bc`; `bc-converged` as for AW).",
    "FC, Forced CHECK": "`forced-check`: Base with one CHECK inserted before SUBMIT and nothing else.",
    "IQL, CQL, BCQ, DQN, Double DQN, SAC": "the other offline RL learners (`iql`, `cql`, `bcq`, `dqn`, "
    "`double-dqn`, `sac`; `baselines`), trained on the same buffer with the same budget.",
    "-greedy": "a stochastic learner acting on its most probable legal action instead of sampling "
    "(both modes are evaluated and ranked as separate policies).",
    "expert, open-loop": "reference policies: the expert reads the state (the 100 of the normalised "
    "score); open-loop plays the setting's best fixed action string and never reads the state.",
    "CBS": "CheckBeforeSubmit: the share of episodes in which a CHECK precedes the submit.",
    "HMS, ΔHMS": "Harness Maturity Score: the weighted share of applicable process events that fired "
    "(EarlySubmit counts against), in [-1, 1]; ΔHMS is a policy's minus Base's.",
    "σ_D": "buffer slack, max G − mean G of the training buffer: no reweighting of the buffer can lift "
    "mean G by more.",
    "Buffer N, Buffer Δ_Q": "the buffer's episodes, and the change of mean G when the buffer itself is "
    "reweighted as AW weights it.",
    "Normalised score": "100 x (mean G − random) / (expert − random) per setting: random = 0, expert = 100.",
    "Run": "one seed of one policy on one setting; a policy has seeds x settings runs.",
    "IQM": "interquartile mean: the mean of the middle 50% of a policy's runs (rliable).",
    "Optimality gap, gap to expert": "the mean shortfall of the runs below the expert's 100.",
    "95% CI": "percentile bootstrap interval; 'Interval over' says what was resampled: seeds (one "
    "model per seed) or episodes (a policy that plays every seed itself).",
    "P(X > Y)": "probability of improvement: the chance that X scores above Y (0.5: no difference).",
    "pass^k": "the chance that k independent rollouts of a task all succeed (pass^1: success rate).",
    "OPE": "off-policy evaluation: a policy's value estimated from the logged buffer alone.",
    "IS, WIS, PDIS, DR": "importance sampling, weighted IS, per-decision IS and doubly robust estimates.",
    "FQE": "fitted Q evaluation: a Q-function of the policy fitted to the buffer (also DR's model).",
    "ESS": "effective sample size of the importance weights; 0: no logged episode follows the policy.",
    "Truth SE, Own Q": "the standard error of a policy's true value; a Q-learner's own value of its "
    "start states.",
    "Validation split": "a fixed fifth of the train tasks, where learning curves are measured; the "
    "evaluation split is played once, by the final models.",
    "State-dependence gap": "the best state-reading reference's G (the expert's; `harness-gym headroom` "
    "also weighs the online reference's) minus open-loop G on the same episodes, its interval resampling "
    "whole tasks: what reading the state is worth.",
    "Top-string share": "the share of a policy's evaluation episodes that play its single most common "
    "action string (open-loop letters); 100%: the policy plays one fixed string whatever it sees.",
    "Verdict MI": "mutual information (bits, plug-in estimate) between a policy's action at a step and "
    "the last check verdict before it: none (no CHECK report yet), pass, or fail (that check raised a "
    "failure signal); 0: the action ignores the verdict, at most log2 3. 'MI bias': the estimate's "
    "first-order upward bias for the number of steps it is over (Miller-Madow).",
    "Tokens": "executor tokens (prompt + completion) per evaluation episode.",
    "—, n/r": "not applicable or missing; n/r: the paper does not report it.",
}
"""Each term and what it means in this report."""


def glossary_section() -> str:
    """## Glossary: ``TERMS``, the open-loop letters, and the seven process events."""
    from harness_gym.core.actions import Action
    from harness_gym.core.hms import DETECTORS
    from harness_gym.policies.open_loop import LETTERS

    letters = ", ".join(f"{letter} = {Action(i).name}" for i, letter in enumerate(LETTERS))
    lines = [f"- **{term}**: {meaning}" for term, meaning in TERMS.items()]
    lines.append(f"- **Open-loop letters**: one per action, {letters}.")
    for event, detector in DETECTORS.items():
        doc = (detector.__doc__ or "").strip().splitlines()[0].replace("``", "`")  # reST -> Markdown
        lines.append(f"- **{event}** (event): {doc}")
    return "## Glossary\n\n" + "\n".join(lines)
