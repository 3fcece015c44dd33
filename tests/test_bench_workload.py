"""The workload benchmark's report: each kchaos side's median rate as a ratio to ProducerPerformance's, and
a side whose history is not whole said so. Timings themselves are never asserted here."""

from __future__ import annotations

import pytest

from bench.workload import JAVA_PROCESS, RDKAFKA_PROCESS, THREADS, KchaosRound, _side, main, markdown


def _round(rate: float, whole: bool = True) -> KchaosRound:
    return KchaosRound(
        records=1000, acknowledged=1000, records_per_s=rate, consumer_behind_s=0.1, outcomes_per_invoke=whole,
        acknowledged_read=1000, history_rows=3001, convert_arrow_s=0.01, convert_rows_s=0.05,
    )  # fmt: skip


def test_each_side_is_its_median_rate_against_producer_performances() -> None:
    side = _side([_round(30_000), _round(90_000), _round(60_000)], perf_rate=50_000)
    assert (side["per_s"], side["ratio"]) == (60_000, 1.2)
    assert side["every_send_recorded"] and side["every_ack_read"]
    assert not _side([_round(1.0), _round(1.0, whole=False)], 1.0)["every_send_recorded"]


def test_the_report_names_every_side_with_its_ratio_and_a_history_that_is_not_whole() -> None:
    result = {
        "kafka_version": "4.3.1", "records": 1000, "rounds": 1, "producers": 1, "acks": "all",
        "producer_performance": [{"records": 1000, "records_per_s": 50_000.0}],
        "producer_performance_per_s": 50_000.0,
        "sides": {
            THREADS: _side([_round(25_000)], 50_000),
            RDKAFKA_PROCESS: _side([_round(60_000)], 50_000),
            JAVA_PROCESS: _side([_round(40_000, whole=False)], 50_000),
        },
    }  # fmt: skip
    text = markdown(result)
    assert f"--sides {THREADS},{RDKAFKA_PROCESS},{JAVA_PROCESS}" in text
    assert (
        f"**{THREADS}: 25,000/s, ratio 0.5**" in text
        and f"**{RDKAFKA_PROCESS}: 60,000/s, ratio 1.2**" in text
    )
    assert f"**{JAVA_PROCESS}: 40,000/s, ratio 0.8** (median)" in text and "one outcome per send: NO" in text
    assert (
        "| 1 | 50,000 | 25,000 (1,000 acked, whole) | 60,000 (1,000 acked, whole) "
        "| 40,000 (1,000 acked, NOT WHOLE) |" in text
    )


def test_an_unknown_side_is_refused_before_any_cluster_starts(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--sides", "threads,kcat"])
    assert "--sides: kcat; choose from threads, rdkafka-process, java-process" in capsys.readouterr().err
