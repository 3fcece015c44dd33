"""Counts held against the oracle's rules: a verdict per anomaly, and the run's.

Each count becomes `ok` (none occurred), `permitted` (occurred, and the docs allow it here) or `violation`
(occurred, and the docs say it cannot). An anomaly the history could not be checked for (no replica dumps)
is `unchecked`: never `ok`, and it does not move the run's verdict. One that occurred where the deciding
rule expects `unknown` is `unchecked` too, with the reason, and keeps the run from passing as `ok`: a loss
nobody can judge is not a pass.

After a power loss an anomaly counted per partition (`by_partition`) is judged partition by partition,
since whether a loss is allowed depends on whether that partition's whole in-sync replica set lost power;
one partition's excuse never covers another's loss.

Pure Python, like the rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from kchaos.checkers.rules.known_fixes import known_fix
from kchaos.checkers.rules.oracle import Expectation, GuaranteeContext, Rule
from kchaos.checkers.rules.rule_table import rule_for
from kchaos.checkers.rules.verdict_names import OK, PERMITTED, UNCHECKED, VERDICT_SEVERITY, VIOLATION, Verdict


@dataclass(frozen=True)
class PartitionVerdict:
    """An anomaly's count in one partition and the verdict the rule for that partition gives it."""

    count: int
    verdict: Verdict
    rule_id: str

    def to_json(self) -> dict[str, Any]:
        return {"count": self.count, "verdict": self.verdict, "rule_id": self.rule_id}


@dataclass(frozen=True)
class Judgement:
    """One anomaly's count held against the rule that decides what this run was allowed to show.

    `count` is None when the anomaly could not be checked; the rule is still named (what the run would
    have been allowed to show), but the verdict is `unchecked`. `partitions` is set when the anomaly was
    judged partition by partition; the rule named is then the one behind the anomaly's verdict.
    """

    anomaly: str
    count: int | None
    expected: Expectation
    verdict: Verdict
    rule: str
    source: str
    rule_id: str
    unchecked_reason: str | None = None
    partitions: Mapping[str, PartitionVerdict] | None = None
    #: For a violation on a release from before the fix of its promise: that fix
    #: (kchaos.checkers.rules.known_fixes).
    known_fix: str | None = None

    @property
    def checked(self) -> bool:
        return self.count is not None

    @property
    def undecided(self) -> bool:
        """Occurred, but no rule can say whether it was allowed."""
        return bool(self.count) and self.verdict == UNCHECKED

    def to_json(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            **({"unchecked_reason": self.unchecked_reason} if self.verdict == UNCHECKED else {}),
            "count": self.count,
            "expected": self.expected,
            "verdict": self.verdict,
            "rule": self.rule,
            "rule_id": self.rule_id,
            "source": self.source,
            **({"known_fix": self.known_fix} if self.known_fix else {}),
            **(
                {"partitions": {key: part.to_json() for key, part in self.partitions.items()}}
                if self.partitions is not None
                else {}
            ),
        }


#: The verdict on an anomaly that occurred, by what its rule expected.
OCCURRED: dict[Expectation, Verdict] = {"possible": PERMITTED, "none": VIOLATION, "unknown": UNCHECKED}


def verdict_for(count: int | None, expected: Expectation) -> Verdict:
    if count is None:
        return UNCHECKED
    return OK if count == 0 else OCCURRED[expected]


def _listed(partitions: Iterable[str]) -> str:
    names = list(partitions)
    return f"partition{'s' if len(names) > 1 else ''} {', '.join(names)}"


def undecided_reason(ctx: GuaranteeContext, partitions: Iterable[str] | None = None) -> str:
    """Why an anomaly that occurred in `partitions` (None: not counted per partition) cannot be judged."""
    if partitions is not None:
        return (
            f"in {_listed(partitions)} the leader watcher recorded no in-sync replicas before the power "
            "loss (or no eligible leader replicas while a replica outside the ISR kept power), so whether "
            "every replica that could lead lost power is not known"
        )
    took = [key for key, fate in ctx.isr_fates.items() if fate == "lost-power"]
    rest = [key for key, fate in ctx.isr_fates.items() if fate != "lost-power"]
    if took and rest:
        return (
            f"a power loss took every in-sync replica of {_listed(took)} but not of {_listed(rest)}, and "
            "this anomaly is not counted per partition, so where it happened is not known"
        )
    return (
        "the leader watcher recorded no in-sync replicas before the power loss, so whether every one of "
        "them lost power is not known"
    )


def _judgement(
    anomaly: str, count: int | None, rule: Rule, verdict: Verdict, ctx: GuaranteeContext, **more: Any
) -> Judgement:
    fixed = known_fix(rule.id, ctx.kafka_version, ctx.transaction_protocols) if verdict == VIOLATION else None
    return Judgement(
        anomaly=anomaly,
        count=count,
        expected=rule.expected,
        verdict=verdict,
        rule=rule.statement,
        source=rule.source,
        rule_id=rule.id,
        known_fix=fixed,
        **more,
    )


def judge(
    anomaly: str,
    count: int | None,
    ctx: GuaranteeContext,
    unchecked_reason: str | None = None,
    by_partition: Mapping[str, int] | None = None,
) -> Judgement:
    """The verdict on `count` occurrences of `anomaly` (None: the history could not be checked for it,
    for `unchecked_reason`). With `by_partition`, its count per partition, a run that lost power is judged
    partition by partition."""
    if count and by_partition and ctx.power_lost:
        return judge_by_partition(anomaly, count, ctx, by_partition)
    rule = rule_for(anomaly, ctx)
    verdict = verdict_for(count, rule.expected)
    if count is None:
        reason: str | None = unchecked_reason or "not checked"
    else:
        reason = undecided_reason(ctx) if verdict == UNCHECKED else None
    return _judgement(anomaly, count, rule, verdict, ctx, unchecked_reason=reason)


def combined_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """One anomaly's verdict from its partitions': a violation anywhere is a violation; otherwise a part
    that cannot be judged leaves the whole unjudged, as `permitted` would vouch for it."""
    found = set(verdicts)
    order: tuple[Verdict, ...] = (VIOLATION, UNCHECKED, PERMITTED)
    return next((verdict for verdict in order if verdict in found), OK)


def judge_by_partition(
    anomaly: str, count: int, ctx: GuaranteeContext, by_partition: Mapping[str, int]
) -> Judgement:
    """Judges each partition the anomaly occurred in by the rule for that partition; the anomaly's verdict
    is `combined_verdict` of theirs, and the rule named is that of the first partition with that verdict."""
    rules = {key: rule_for(anomaly, replace(ctx, partition=key)) for key, n in by_partition.items() if n}
    parts = {
        key: PartitionVerdict(by_partition[key], verdict_for(by_partition[key], rule.expected), rule.id)
        for key, rule in rules.items()
    }
    verdict = combined_verdict(part.verdict for part in parts.values())
    deciding = next(key for key, part in parts.items() if part.verdict == verdict)
    undecided = [key for key, part in parts.items() if part.verdict == UNCHECKED]
    reason = undecided_reason(ctx, undecided) if verdict == UNCHECKED else None
    return _judgement(
        anomaly, count, rules[deciding], verdict, ctx, unchecked_reason=reason, partitions=parts
    )


def judge_all(
    counts: Mapping[str, int | None],
    ctx: GuaranteeContext,
    reasons: Mapping[str, str] | None = None,
    by_partition: Mapping[str, Mapping[str, int] | None] | None = None,
) -> dict[str, Judgement]:
    """Judges every count; `reasons` says why each None count could not be checked, `by_partition` gives
    the per-partition counts of the anomalies that have them."""
    why = reasons or {}
    split = by_partition or {}
    return {
        anomaly: judge(anomaly, count, ctx, why.get(anomaly), split.get(anomaly))
        for anomaly, count in counts.items()
    }


def worst_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """The most serious of `verdicts`: `unchecked` only when nothing was checked (or there are none)."""
    return max(verdicts, key=VERDICT_SEVERITY.index, default=UNCHECKED)


def overall_verdict(judgements: Iterable[Judgement]) -> Verdict:
    """The worst verdict: one violation fails the run; a permitted anomaly is still worth reporting.

    An anomaly that could not be checked moves nothing: it neither passes nor fails the run. One that
    occurred but could not be judged keeps the run from `ok`: it is then `unchecked`.
    """
    judged = list(judgements)
    worst = worst_verdict(judgement.verdict for judgement in judged)
    if worst in (UNCHECKED, OK):
        return UNCHECKED if any(judgement.undecided for judgement in judged) else OK
    return worst


def undecided_anomalies(judgements: Iterable[Judgement]) -> str | None:
    """`lost-write: <why>`, for each anomaly that occurred but could not be judged; None if none."""
    lines = [f"{j.anomaly}: {j.unchecked_reason}" for j in judgements if j.undecided]
    return "; ".join(lines) or None
