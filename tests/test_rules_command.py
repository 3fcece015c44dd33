"""`kchaos rules` lists the oracle's rule table, the one the judge tries in order, and prints one rule in
full by the id a verdict line names."""

from __future__ import annotations

from kchaos.checkers.rules.rule_table import RULES
from tests.test_cli_errors import assert_harness_failure, invoke


def test_the_listing_has_every_rule_in_the_order_the_oracle_tries_them() -> None:
    result = invoke(["rules"])
    assert result.exit_code == 0, result.output
    header, *lines = result.stdout.splitlines()
    assert header.split() == ["rule", "expected", "anomalies"]
    listed = [line.split()[0] for line in lines[: len(RULES)]]
    assert listed == [rule.id for rule in RULES]
    assert "lost-write" in lines[[r.id for r in RULES].index("committed-not-lost")]
    expected_column = lines[0].index(f"  {RULES[0].expected}") + 2
    assert header.index("expected") == expected_column, "the header's columns line up with the rows'"


def test_one_rule_in_full_says_what_when_and_from_which_document() -> None:
    rule = next(rule for rule in RULES if rule.id == "acks-1-failover")
    result = invoke(["rules", rule.id])
    assert result.exit_code == 0, result.output
    assert rule.statement in result.stdout and rule.source in result.stdout
    assert rule.applies_when in result.stdout
    assert "one that occurred is permitted" in result.stdout


def test_an_unknown_rule_is_refused_pointing_at_the_listing() -> None:
    assert_harness_failure(
        invoke(["rules", "no-such-rule"]), "no rule 'no-such-rule'", "`kchaos rules` lists"
    )
