"""Multi-tool: answer a numeric question about tabular documents through a chain of real tools."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from harness_gym.core.actions import Action
from harness_gym.core.task import Task
from harness_gym.domains.base import EVIDENCE_EVENTS, JUDGED_CALLS, ToolSetting, check_outcome, content, form
from harness_gym.domains.generation import MDP2_VERSION
from harness_gym.domains.multi_tool import features as task_features
from harness_gym.domains.multi_tool.prompts import MultiToolPrompts
from harness_gym.domains.multi_tool.tools import (
    Seen,
    ToolResult,
    completed,
    names_in_context,
    numeric,
    read_result,
    run_call,
)
from harness_gym.domains.multi_tool.verifier import (
    CRITERIA,
    AnswerSpec,
    Parsed,
    artifact_scores,
    claim_support,
    parse_artifact,
    tolerance,
    tool_use_score,
    unconnected,
)
from harness_gym.envs.domain import (
    VERIFIER_CACHE,
    ArtifactPool,
    Episode,
    Flawed,
    Outcome,
    Verdict,
    artifact_hash,
)
from harness_gym.envs.env import HarnessEnv
from harness_gym.envs.features import declare
from harness_gym.executors.base import Context, Feedback, Finding
from harness_gym.executors.profiles import DraftParams

DRAFT_PARAMS = DraftParams(
    p_correct={"easy": 0.2, "standard": 0.11, "hard": 0.05},
    informed_gain=0.52,
    flaw_weights={
        "wrong_unit": 1.5,
        "missing_conversion": 1.5,
        "arithmetic_slip": 1.5,
        "distractor_value": 1.0,
        "malformed": 0.6,
    },
    p_tool_correct=0.98,
)
"""Simulated LLM answering numeric questions with tools (defaults calibrated on the Base harness only).

``p_correct`` is low because an LLM that has not run the tools mostly guesses the table, the
arithmetic or the conversion; ``informed_gain`` is large because the answer is only known once the
whole required chain has run (informedness = fraction of the gold chain completed). Base runs one
tool call, so it sees a half (easy) to a quarter (hard) of the chain. ``p_tool_correct`` is the
chance a tool request yields the right next call; the wrong ones split between refused calls (bad
document/table/column, malformed expression or call, unsupported or incompatible unit, bad value)
and valid but wrong ones (wrong document or tool, distractor table, wrong expression or target unit).
Wrong drafts lean towards unit mistakes and slips, the errors tool use prevents.

Calibration (Base harness, eval split, protocol seeds (0, 1, 2) x 3 rollouts), against the paper's
Base G (0.528) and its Base rates ValidToolUse 100% and EarlySubmit 0% (an invalid first call leaves
Base without evidence): Base made no invalid call in the paper's 180 episodes, whose 95% Wilson lower
bound is 0.98, hence ``p_tool_correct`` 0.98 (it was 0.85: 9.4% invalid calls); ``informed_gain`` then
brings G back to the paper's. The rubric weights (3/1/1) were fixed beforehand. A harness that runs
the whole chain first drafts the right answer about 62% of the time, one that drafts blind about 10%.
"""


NOISE_COST = 0.2
"""MDP v2 only (the ``multi_tool-v1`` tasks): informedness lost per tool result in the context that
accomplished no step of the gold chain (a surplus call after the chain is complete, a repeated, refused
or wrong call), so a harness that calls more tools than the question needs pays for it (in first drafts
and in fixes of content flaws, which both read informedness). Such output is context the answer does not
need, and irrelevant context lowers LLM accuracy: one irrelevant sentence added to a GSM8K problem lowers
it markedly (Shi et al. 2023, "Large Language Models Can Be Easily Distracted by Irrelevant Context",
GSM-IC), and padding the input with irrelevant or repeated text lowers reasoning accuracy as the input
grows (Levy et al. 2024, "Same Task, More Tokens"). The size is an assumption: 0.2 informedness is about
0.1 of first-draft accuracy at ``informed_gain`` 0.52, i.e. about a sixth of what the whole chain gives
(0.62), chosen below the drop GSM-IC shows for one added sentence. Without it (MDP v1) an extra call
costs nothing but a step, so one long string of tool calls is best on every task whatever the question
implies."""


FLAWS = {
    "wrong_unit": content("unit", "format", "differs_from_tool"),
    "missing_conversion": content("unit", "differs_from_tool"),
    "arithmetic_slip": content("differs_from_tool", "number_missing"),
    "distractor_value": content("differs_from_tool"),
    "malformed": form("format"),
}
"""Which findings name each flaw kind, its class and what its fix needs: the right number and unit
come from running the gold chain (informedness: the convert result for a unit, the calculator for a
slip, the right table's extraction for a distractor); a malformed answer needs nothing."""


CALLS = {**JUDGED_CALLS, Action.CALL_TOOL: "tool"}
"""CHECK asks the judge and CALL_TOOL asks the executor for the next call."""


@dataclass(frozen=True, slots=True)
class Results:
    """What a sequence of tool-result texts tells: each result read back, which gold steps they accomplish,
    the numeric outputs and the tools that ran successfully."""

    seen: tuple[Seen, ...]
    done: list[bool]
    """Per gold step of the task's chain (``tools.completed``)."""
    next_step: int
    """The first gold step not yet accomplished (the last one once all are): what a tool request aims at."""
    outputs: tuple[tuple[float, str | None], ...]
    """(number, unit) of every ok calculator/convert result, in order."""
    ran: frozenset[str]
    run_key: str
    """The tool-run cache's key part: a call's result depends on the extractions in view."""

    @classmethod
    def read(cls, chain: Sequence[Mapping], texts: Sequence[str]) -> Results:
        seen = tuple(read_result(text) for text in texts)
        done = completed(chain, seen)
        extractions = [s.value for s in seen if s.ok and s.tool == "extract_table"]
        return cls(
            seen=seen,
            done=done,
            next_step=next((i for i, ok in enumerate(done) if not ok), len(chain) - 1),
            outputs=tuple(out for out in map(numeric, seen) if out is not None),
            ran=frozenset(s.tool for s in seen if s.ok),
            run_key="run|" + "|".join(extractions),
        )


class MultiToolDomain(ToolSetting):
    """Tool outputs are the evidence here (``tool:<index>:<name>``), so claims need them."""

    name = "multi_tool"
    features = declare(name, task_features)
    draft_params = DRAFT_PARAMS
    prompts_cls = MultiToolPrompts
    flaws = FLAWS
    calls = CALLS
    criteria: Mapping[str, float] = CRITERIA
    cost_budget = 20.0
    events = ToolSetting.events | EVIDENCE_EVENTS
    evidence_required = True
    mdp2_task_file = f"multi_tool-{MDP2_VERSION}.jsonl"

    # -- the gold chain ------------------------------------------------------------------------
    def _results(self, task: Task, texts: Sequence[str]) -> Results:
        """What the domain reads off these tool-result texts (memoised: asked on every tool call, draft,
        CHECK and episode end, and the texts only grow within an episode and recur across episodes)."""
        key = tuple(texts)
        return VERIFIER_CACHE.get("results", task, key, lambda: Results.read(task.payload["chain"], key))

    def _context_results(self, task: Task, context: Context) -> Results:
        """``_results`` of the context's tool results, kept on the context until a result is appended
        (read several times a step: the next gold call, informedness, CHECK, the episode's score)."""
        texts = context.tool_results
        kept = context.derived.get("results")
        if kept is None or kept[0] is not texts or kept[1] != len(texts):
            kept = context.derived["results"] = (texts, len(texts), self._results(task, texts))
        return kept[2]

    def _done(self, task: Task, context: Context) -> list[bool]:
        """Which gold steps the tool results so far accomplish."""
        return self._context_results(task, context).done

    def _chain_output(self, task: Task, context: Context) -> tuple[float, str | None] | None:
        """The result of the furthest completed calculator/convert step of the chain (an extra call made
        after the chain does not move what the answer must agree with); None before any."""
        chain = task.payload["chain"]
        done = self._done(task, context)
        for step, ok in zip(reversed(chain), reversed(done), strict=True):
            if ok and step["tool"] in ("calculator", "convert"):
                return float(step["match"]["value"]), step["match"].get("unit")
        return None

    def informedness(self, task: Task, context: Context) -> float:
        """Fraction of the gold tool chain whose results are in the context; on the tasks of MDP v2, less
        ``NOISE_COST`` per tool result that accomplished no gold step (``NOISE_COST``)."""
        done = self._done(task, context)
        gathered = sum(done) / len(done)
        if task.version != MDP2_VERSION:
            return gathered
        noise = len(context.tool_results) - sum(done)
        return max(0.0, gathered - NOISE_COST * noise)

    def tool_pool(self, task: Task, context: Context) -> ArtifactPool:
        """The next gold call (first step not yet accomplished; the last one once all are) and wrong calls."""
        pools = self.per_task(
            "tool_pools",
            task,
            lambda: tuple(
                ArtifactPool(step["call"], tuple(Flawed(c["flaw"], c["source"]) for c in step["candidates"]))
                for step in task.payload["chain"]
            ),
        )
        return pools[self._context_results(task, context).next_step]

    # -- actions -------------------------------------------------------------------------------
    def observe(self, ep: Episode) -> Outcome:
        n = len(ep.task.payload["documents"])
        return Outcome(text=f"read the question, the catalogue of {n} documents and the four tools")

    def _run(self, task: Task, context: Context, text: str) -> ToolResult:
        results = self._context_results(task, context)
        docs = task.payload["documents"]
        return VERIFIER_CACHE.get(
            results.run_key,
            task,
            text,
            lambda: run_call(docs, text, names_in_context(docs, results.seen)),
        )

    def call_tool(self, ep: Episode) -> Outcome:
        """Ask the executor for a call, validate and run it; its result text goes into the context.

        The harness operation itself always succeeds (``Outcome.valid``); whether the *call* was valid is
        ``tool["valid"]`` (what ValidToolUse and the ``errors`` feature read). A refused or failed call is
        a failure signal whose feedback is about the call (keyed by the call's hash, so it never passes
        for feedback on the draft). A successful call is also an evidence item ``tool:<index>:<name>``:
        tool outputs are this domain's evidence (EvidenceBeforeClaim, ``evidence_required``).
        """
        response = ep.ask("tool")
        if response.error is not None:
            message = f"executor error: {response.error}"
            result = ToolResult("unknown", False, False, f"unknown -> error: {message}", error=message)
        else:
            result = self._run(ep.task, ep.context, response.text)
        index = len(ep.context.tool_results)
        issues = (Finding("tool_call", result.error),) if result.error else ()
        return Outcome(
            text=result.text,
            evidence=(f"tool:{index}:{result.tool}",) if result.ok else (),
            tool={"name": result.tool, "valid": result.valid, "ok": result.ok},
            issues=issues,
            failure=not result.ok,
            feedback=Feedback("tool", artifact_hash(response.text), issues) if issues else None,
        )

    def _parsed(self, ep: Episode, artifact: str) -> tuple[AnswerSpec, Parsed]:
        spec = self.per_task("spec", ep.task, lambda: AnswerSpec.from_payload(ep.task.payload))
        return spec, VERIFIER_CACHE.get("parse", ep.task, artifact, lambda: parse_artifact(spec, artifact))

    def check(self, ep: Episode) -> Outcome:
        assert ep.draft is not None and ep.draft_hash is not None
        issues = list(
            VERIFIER_CACHE.get(
                "check", ep.task, (ep.draft, *ep.context.tool_results), lambda: self._findings(ep)
            )
        )
        _, judge_issue = ep.judge()
        if judge_issue is not None:
            issues.append(judge_issue)
        coverage = 1.0 - len(issues) / 5
        return check_outcome(
            ep, f"checked the answer: coverage {coverage:.2f}, {len(issues)} issue(s)", coverage, issues
        )

    def _findings(self, ep: Episode) -> tuple[Finding, ...]:
        """CHECK's observable findings: a function of the draft and the tool results alone (kept per pair
        by ``check``), in the order CHECK reports them, before the judge's."""
        assert ep.draft is not None
        spec, parsed = self._parsed(ep, ep.draft)
        issues: list[Finding] = []
        if not (parsed.answer_exact and parsed.layout_ok):
            issues.append(
                Finding(
                    "format",
                    f"format: expected exactly two lines, '{spec.example()}' with {spec.decimals} decimal(s) "
                    f"and 'TOOLS: {', '.join(spec.tools)}'",
                )
            )
        if parsed.unit != spec.unit:
            found = parsed.unit or "no known unit"
            issues.append(Finding("unit", f"unit: the answer must be in {spec.unit}, found {found}"))
        results = self._context_results(ep.task, ep.context)
        outputs = results.outputs
        if not outputs:
            issues.append(
                Finding(
                    "no_tool_output",
                    "consistency: no calculator or convert output in the context backs the number",
                )
            )
        elif parsed.number is None:
            issues.append(Finding("number_missing", "consistency: no number found in the answer"))
        else:
            last, unit = self._chain_output(ep.task, ep.context) or outputs[-1]
            if abs(parsed.number - last) > tolerance(last, spec.decimals):
                shown = f"{last:.{spec.decimals}f}" + (f" {unit}" if unit else "")
                issues.append(
                    Finding(
                        "differs_from_tool",
                        f"consistency: the answer {parsed.number:g} differs from the tool output {shown}",
                    )
                )
        missing = [name for name in spec.tools if name not in results.ran]
        texts = tuple(ep.context.tool_results)
        linked = VERIFIER_CACHE.get(
            "unconnected", ep.task, texts, lambda: tuple(unconnected(spec.tools, texts))
        )
        loose = [name for name in linked if name not in missing]
        if missing:
            issues.append(
                Finding(
                    "tools_missing", f"tools: required tool(s) not run successfully yet: {', '.join(missing)}"
                )
            )
        elif loose:
            issues.append(
                Finding(
                    "tools_unconnected",
                    f"tools: {', '.join(loose)} never ran on the output of the previous step",
                )
            )
        return tuple(issues)

    def score(self, ep: Episode, artifact: str) -> Verdict:
        payload = ep.task.payload
        base = VERIFIER_CACHE.get("score", ep.task, artifact, lambda: artifact_scores(payload, artifact))
        calls = [s["tool"] for s in ep.steps if "tool" in s]
        rubric = {
            "numeric_answer": base["numeric_answer"],
            "tool_use": (tool_use_score(calls, self._done(ep.task, ep.context)), CRITERIA["tool_use"]),
            "format": base["format"],
        }
        spec, parsed = self._parsed(ep, artifact)
        texts = tuple(s["text"] for s in ep.steps if "tool" in s)
        support = VERIFIER_CACHE.get(
            "claim_support|" + artifact_hash(artifact),
            ep.task,
            texts,
            lambda: claim_support(spec, parsed, self._results(ep.task, texts).seen),
        )
        return Verdict(rubric=rubric, signals={"claim_support": support})


class HarnessMultiToolEnv(HarnessEnv):
    """Multi-tool: answer a numeric question about tabular documents by chaining real tools.

    ## Description

    Each task lists a few documents (freight reports, fuel logs, stock lists, energy statements, travel
    claims, harvest records) and asks a numeric question, e.g. the total charge of some shipments in
    another currency. Answering needs a chain of tools: ``read_document`` (notes and table names),
    ``extract_table`` (rows; binds cells as ``<column>_<row>``), ``calculator`` (safe arithmetic parsed
    with ``ast``) and ``convert`` (fixed documented unit and currency rates). Easy tasks need two tools,
    standard three, hard four, with a superseded table and an older report as distractors. The prompt
    states the required tool chain and the answer format; the artifact is two lines,
    ``<LABEL>: <number> <unit>`` (or unit first) and ``TOOLS: <tools used, in order>``.

    - OBSERVE: read the question, the document catalogue and the tool list.
    - CALL_TOOL: the executor chooses the tool and its arguments (one JSON object
      ``{"tool": ..., "args": {...}}``); the call is validated and run for real. An invalid call (unknown
      document, table or column, malformed expression, unsupported unit, ...) is refused with a clear
      error (``tool["valid"] = False``, a failure signal); a valid call's result goes into the context,
      and a successful one is also recorded as an evidence item ``tool:<index>:<name>``. Drafts become
      more often right as more of the required chain has run.
    - CHECK: observable checks only: answer format, required unit, the number agrees with the last
      calculator/convert output in the context, every required tool ran successfully, plus an LLM judge
      (an executor call). Coverage is the fraction of these five items passing; issues localise the fault
      for REVISE.
    - RETRIEVE: not available (always masked); tools are the way to gather evidence here.

    Rubric: ``numeric_answer`` (3; in the required unit and within max(1e-3 relative, the format's
    rounding) of the reference), ``tool_use`` (1; half the fraction of valid tool calls in the episode,
    half the fraction of the required tools that ran successfully), ``format`` (1; the answer line in the
    required form, a TOOLS line containing the required chain, nothing else). Default ``max_steps`` 12.
    Base harness: OBSERVE, CALL_TOOL, DRAFT, SUBMIT.

    MDP v2 (``obs_layout="v2"``) plays the ``multi_tool-v1`` tasks (``generate_mdp2.py``: the same
    families drawn apart), where each tool result that accomplishes no step of the required chain (a call
    after the chain is complete, a repeated, refused or wrong call) lowers informedness by ``NOISE_COST``
    (0.2, an assumption; irrelevant context lowers LLM accuracy: Shi et al. 2023), so the number of calls
    a task needs matters.
    """

    domain_cls = MultiToolDomain
