"""A count's noun agrees with it: a run with one fault said "with 1 faults"."""

from __future__ import annotations

import pytest

from kchaos.model.plurals import counted, plural


@pytest.mark.parametrize(
    ("count", "noun", "many", "expected"),
    [
        (1, "fault", None, "1 fault"),
        (0, "fault", None, "0 faults"),
        (2, "fault", None, "2 faults"),
        (1, "Kafka 4.3.1 node", None, "1 Kafka 4.3.1 node"),
        (3, "Kafka 4.3.1 node", None, "3 Kafka 4.3.1 nodes"),
        (1, "anomaly", "anomalies", "1 anomaly"),
        (5, "anomaly", "anomalies", "5 anomalies"),
    ],
)
def test_a_count_takes_the_noun_its_number_takes(
    count: int, noun: str, many: str | None, expected: str
) -> None:
    assert counted(count, noun, many) == expected
    assert plural(count, noun, many) == expected.split(" ", 1)[1]
