"""What a run came to, and the judge that decides it: check a run directory and write its report.

This is the runner's judge side. It reads only the run directory, so `kchaos check`, `kchaos report` and
spark-submit load the checkers and Spark but never the cluster's libraries (docker, testcontainers,
confluent_kafka); `kchaos.runner.run` makes the run directory and then hands it here.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kchaos.checkers.lost_count import run_acknowledged, run_lost
from kchaos.checkers.results import Progress, check_run, no_progress
from kchaos.checkers.rules.anomaly_names import EOS_LOST, LOST_COMMITTED, LOST_WRITE, TRUNCATED_READ, UNSEEN
from kchaos.checkers.rules.checkability import NO_EOS, NO_PLAIN_SENDS, NO_TRANSACTIONS
from kchaos.checkers.rules.verdict_names import VIOLATION
from kchaos.checkers.runtime.jvm_output import jvm_output_into
from kchaos.checkers.runtime.session import spark_session
from kchaos.model.config import DEFAULT_DRIVER_MEMORY
from kchaos.model.run_files import RunDir
from kchaos.spark_analysis.report import write_report

#: The reasons an anomaly is not checked that say it does not apply to what the run did (transaction
#: anomalies of a run that wrote no transactions), each as the terminal says it: nothing the user could fix
#: in the run, so all of them together get one line, where a reason the user can act on gets one each.
NOT_APPLICABLE = {
    NO_TRANSACTIONS: "the run wrote no transactions",
    NO_EOS: "the group's members wrote no transactions",
    NO_PLAIN_SENDS: "every record was written in a transaction",
}

#: How the terminal names each part of the headline `lost` (`kchaos.checkers.lost_count`).
LOST_PART_NAMES = {
    LOST_WRITE: "never read",
    UNSEEN: "beyond the final read",
    TRUNCATED_READ: "read, then truncated",
    LOST_COMMITTED: "committed, then lost",
    EOS_LOST: "consumed, output missing",
}

#: A known fix as the terminal names it (`KIP-101, fixed in 0.11.0`); the report has the whole story.
_FIX_NAME = re.compile(r"KIP-\d+, fixed in \d+(?:\.\d+)*")


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

    def lost_text(self) -> str:
        """The headline `lost` as the terminal says it: `lost: 8234 (read, then truncated: 8234)`, naming
        only the parts that are not 0, or why it is not known. Results written before the headline existed
        get it counted from their anomalies."""
        lost = run_lost(self.results)
        if lost["count"] is None:
            return f"lost: not known ({', '.join(lost['unchecked'])} not checked)"
        parts = ", ".join(f"{LOST_PART_NAMES[name]}: {n}" for name, n in lost["parts"].items() if n)
        return f"lost: {lost['count']}" + (f" ({parts})" if parts else "")

    def acknowledged(self) -> int | str:
        """The writes the run had acknowledged: plain sends and records of committed transactions
        (`kchaos.checkers.lost_count.run_acknowledged`; `?` for results that do not say)."""
        acknowledged = run_acknowledged(self.results)
        return "?" if acknowledged is None else acknowledged

    def counts_text(self) -> str:
        """What a row of runs (a hunt's) says beside the verdict, as a matrix row does: `6000 acknowledged,
        3 lost; lost-write, unseen`, the anomalies found last."""
        lost = run_lost(self.results)["count"]
        found = ", ".join(self.occurred())
        return f"{self.acknowledged()} acknowledged, {'n/a' if lost is None else lost} lost" + (
            f"; {found}" if found else ""
        )

    def run_lines(self) -> list[str]:
        """What the run got to do, against what was asked: how far it got, the faults it applied (in a
        replay, each that hit or chose otherwise than the original's, and why), the rates it reached, each
        topic's counts when it wrote several. Ends with a warning when it wrote far below its requested
        rate."""
        phases = self.results.get("phases") or {}
        applied = self.results.get("fault_application") or {}
        rates = self.results.get("rates") or {}
        lines = [text for text in (phases.get("description"), applied.get("description")) if text]
        lines.extend(
            f"{item['key']} hit or chose otherwise than in the run it replays: {item['reason']}"
            for item in applied.get("re_chosen") or ()
        )
        if rates.get("line"):
            lines.append(rates["line"])
        topics = self.results.get("topics") or {}
        if topics.get("line"):
            lines.append(f"topics: {topics['line']}")
        if rates.get("shortfall"):
            lines.append(
                f"the run acknowledged {rates['sends_acknowledged_per_s']:,.0f} sends/s of the "
                f"{rates['sends_requested_per_s']:,.0f} requested: it tested a lighter load than asked "
                "(the report's throughput plot shows when it fell behind)"
            )
        return lines

    def verdict_line(self) -> str:
        """`verdict: ok`, qualified by what the verdict rests on when not every requested fault or phase
        happened, e.g. `verdict: ok (faults: 1 of 2 applied (latency#2 skipped: no sch_netem))`; a violation
        names the rules broken, by id (`verdict: violation (rule committed-not-lost)`)."""
        reason = self.results.get("verdict_reason")
        if reason:
            return f"verdict: {self.verdict} ({reason})"
        qualifiers: list[str] = []
        if self.verdict == VIOLATION:
            broken = dict.fromkeys(
                str(a.get("rule_id")) for a in self.occurred().values() if a.get("verdict") == VIOLATION
            )
            if broken:
                qualifiers.append(f"rule {', '.join(broken)}")
        phases = self.results.get("phases") or {}
        if phases.get("recorded") and not phases.get("complete"):
            qualifiers.append(str(phases.get("description")))
        applied = self.results.get("fault_application") or {}
        if len(applied.get("applied", ())) < len(applied.get("requested", ())):
            qualifiers.append(str(applied.get("description")))
        return f"verdict: {self.verdict}" + (f" ({'; '.join(qualifiers)})" if qualifiers else "")

    def verdict_of(self, anomaly: str) -> str:
        return str(self.results["anomalies"][anomaly]["verdict"])

    def occurred(self) -> dict[str, dict[str, Any]]:
        """The anomalies counted at least once, in the results' order."""
        return {name: a for name, a in self.results["anomalies"].items() if a.get("count")}

    def unchecked(self) -> dict[str, dict[str, Any]]:
        """The anomalies this run could not be judged on for a reason the user can act on (a phase the run
        did not complete, replicas not dumped, ...), each with its `unchecked_reason`; not those that do
        not apply to the workload (`not_applicable`)."""
        return {
            name: a
            for name, a in self.results["anomalies"].items()
            if a.get("count") is None and a.get("unchecked_reason") not in NOT_APPLICABLE
        }

    def not_applicable(self) -> dict[str, str]:
        """The anomalies that do not apply to what this run did, each with why, as the terminal says it."""
        return {
            name: NOT_APPLICABLE[a["unchecked_reason"]]
            for name, a in self.results["anomalies"].items()
            if a.get("count") is None and a.get("unchecked_reason") in NOT_APPLICABLE
        }

    def not_applicable_line(self) -> str | None:
        """All of `not_applicable` in one line: `not applicable: aborted-read, ... (the run wrote no
        transactions)`; None when every anomaly applies."""
        inapplicable = self.not_applicable()
        if not inapplicable:
            return None
        reasons = "; ".join(dict.fromkeys(inapplicable.values()))
        return f"not applicable: {', '.join(inapplicable)} ({reasons})"

    @staticmethod
    def judged(name: str, anomaly: dict[str, Any]) -> str:
        """One anomaly's count and judgement, with the id of the rule that decided it and the release that
        fixed it when one did; the rule's text and the fix's story are in the report, not on a terminal."""
        if anomaly.get("count") is None:
            return f"{name}: not checked ({anomaly.get('unchecked_reason')})"
        fixes = _FIX_NAME.findall(str(anomaly.get("known_fix") or ""))
        known = f"; known: {'; '.join(fixes)}" if fixes else ""
        return f"{name}: {anomaly['count']} -> {anomaly['verdict']} (rule {anomaly.get('rule_id')}{known})"

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


#: Told a run's outcome as soon as it is judged, before its report is written (`check_and_report`).
Judged = Callable[[RunOutcome], None]


def check_and_report(
    run_dir: Path,
    spark_master: str | None,
    max_examples: int = 10,
    progress: Progress = no_progress,
    judged: Judged | None = None,
    driver_memory: str = DEFAULT_DRIVER_MEMORY,
) -> RunOutcome:
    """Checks `run_dir` and writes its report, saying to `progress` what it works on; what Spark's JVM
    printed meanwhile goes to the run's harness.log, never to the terminal. `judged` is given the outcome
    as soon as the verdict is in, so a terminal can show it while the report (a second or more of plots)
    is written to the path it names. `driver_memory` is the heap of a JVM the check starts."""
    files = RunDir(run_dir)
    with jvm_output_into(files.harness_log):
        results = check_run(
            run_dir, spark_master=spark_master, max_examples=max_examples, progress=progress,
            driver_memory=driver_memory,
        )  # fmt: skip
        if judged is not None:
            judged(RunOutcome(run_dir, results, files.report))
        progress("writing the report")
        report = write_report(run_dir, results, spark_session(spark_master, driver_memory))
    return RunOutcome(run_dir, results, report)
