"""The oracle's rule table, in the order rules are tried, and the lookup that judges by it.

For each anomaly the first rule (in table order) whose condition holds decides the expectation; every
anomaly ends with an unconditional rule, so the table is total. The rules about records and the log come
first, then those about consumer groups, then those about read-write transactions, then
`replicas-converge`: the order docs/rules.md's table shows.
"""

from __future__ import annotations

from kchaos.checkers.rules.group_rules import GROUP_RULES
from kchaos.checkers.rules.log_rules import LOG_RULES, REPLICAS_CONVERGE
from kchaos.checkers.rules.oracle import GuaranteeContext, Rule
from kchaos.checkers.rules.read_write_rules import READ_WRITE_RULES

RULES: tuple[Rule, ...] = (*LOG_RULES, *GROUP_RULES, *READ_WRITE_RULES, REPLICAS_CONVERGE)


def rule_for(anomaly: str, ctx: GuaranteeContext) -> Rule:
    """The first rule in table order that covers `anomaly` and holds for `ctx`."""
    for rule in RULES:
        if anomaly in rule.anomalies and rule.applies(ctx):
            return rule
    raise KeyError(f"the oracle has no rule for anomaly {anomaly!r}; add one to RULES")
