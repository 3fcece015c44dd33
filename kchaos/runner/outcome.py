"""What a run came to, and the judge that decides it: check a run directory and write its report.

This is the runner's judge side. It reads only the run directory, so `kchaos check`, `kchaos report` and
spark-submit load the checkers and Spark but never the cluster's libraries (docker, testcontainers,
confluent_kafka); `kchaos.runner.run` makes the run directory and then hands it here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.checkers.results import check_run
from kchaos.checkers.spark import spark_session
from kchaos.spark_analysis.report import write_report


@dataclass(frozen=True)
class RunOutcome:
    run_dir: Path
    results: dict[str, Any]
    report: Path

    @property
    def verdict(self) -> str:
        return str(self.results["verdict"])

    def count(self, anomaly: str) -> int:
        """How often `anomaly` occurred; raises if it could not be checked, which is not the same as 0."""
        found = self.results["anomalies"][anomaly]
        if found["count"] is None:
            raise ValueError(f"{anomaly} was not checked on this run: {found.get('unchecked_reason')}")
        return int(found["count"])

    def shown_count(self, anomaly: str) -> str:
        found = self.results["anomalies"][anomaly]
        return "not checked" if found["count"] is None else str(found["count"])

    def run_lines(self) -> list[str]:
        """What the run got to do, against what was asked: how far it got, the faults it applied, the
        rates it reached. Ends with a warning when it wrote far below its requested rate."""
        phases = self.results.get("phases") or {}
        applied = self.results.get("fault_application") or {}
        rates = self.results.get("rates") or {}
        lines = [text for text in (phases.get("description"), applied.get("description")) if text]
        if rates.get("line"):
            lines.append(rates["line"])
        if rates.get("shortfall"):
            lines.append(
                f"the run acknowledged {rates['sends_acknowledged_per_s']:,.0f} sends/s of the "
                f"{rates['sends_requested_per_s']:,.0f} requested: it tested a lighter load than asked "
                "(the report's throughput plot shows when it fell behind)"
            )
        return lines

    def verdict_line(self) -> str:
        """`verdict: ok`, qualified by what the verdict rests on when not every requested fault or phase
        happened, e.g. `verdict: ok (faults: 1 of 2 applied (latency#2 skipped: no sch_netem))`."""
        reason = self.results.get("verdict_reason")
        if reason:
            return f"verdict: {self.verdict} ({reason})"
        qualifiers = []
        phases = self.results.get("phases") or {}
        if phases.get("recorded") and not phases.get("complete"):
            qualifiers.append(phases.get("description"))
        applied = self.results.get("fault_application") or {}
        if len(applied.get("applied", ())) < len(applied.get("requested", ())):
            qualifiers.append(applied.get("description"))
        return f"verdict: {self.verdict}" + (f" ({'; '.join(map(str, qualifiers))})" if qualifiers else "")

    def verdict_of(self, anomaly: str) -> str:
        return str(self.results["anomalies"][anomaly]["verdict"])

    def occurred(self) -> dict[str, dict[str, Any]]:
        """The anomalies counted at least once, in the results' order."""
        return {name: a for name, a in self.results["anomalies"].items() if a.get("count")}

    def unchecked(self) -> dict[str, dict[str, Any]]:
        """The anomalies this run could not be judged on, each with its `unchecked_reason`."""
        return {name: a for name, a in self.results["anomalies"].items() if a.get("count") is None}

    @staticmethod
    def judged(name: str, anomaly: dict[str, Any]) -> str:
        """One anomaly's count and judgement, with the rule that decided it."""
        if anomaly.get("count") is None:
            return f"{name}: not checked ({anomaly.get('unchecked_reason')})"
        fixed = f"; known, {anomaly['known_fix']}" if anomaly.get("known_fix") else ""
        return (
            f"{name}: {anomaly['count']} -> {anomaly['verdict']} "
            f"(rule {anomaly.get('rule_id')}: {anomaly.get('rule')}{fixed})"
        )

    def describe(self, examples: int = 2) -> str:
        """What a person needs when a test of this run fails: the verdict, every anomaly that occurred with
        its judgement and first examples, and where the report is."""
        lines = [f"run {self.run_dir}: {self.verdict_line()}", *self.run_lines(), f"report: {self.report}"]
        found = self.occurred()
        if not found:
            lines.append("no anomalies")
        for name, anomaly in found.items():
            lines.append(self.judged(name, anomaly))
            lines.extend(
                "  e.g. " + json.dumps(example, sort_keys=True, default=str)
                for example in anomaly.get("examples", [])[:examples]
            )
        return "\n".join(lines)


def check_and_report(run_dir: Path, spark_master: str | None, max_examples: int = 10) -> RunOutcome:
    results = check_run(run_dir, spark_master=spark_master, max_examples=max_examples)
    report = write_report(run_dir, results, spark_session(spark_master))
    return RunOutcome(run_dir, results, report)
