"""The readers' lag and the records no reader had seen, over a planted run (issue 49): each number is what
the scenario's clock says, a reader cut off shows as a ramp, a record read before its producer heard the
acknowledgement is seen at once, an aborted transaction's record waits for no one, and the report draws
both."""

from __future__ import annotations

import math
from pathlib import Path

from pyspark.sql import SparkSession

from kchaos.model.events import OK, TXN_ABORT, TXN_BEGIN, TXN_COMMIT, TXN_SEND
from kchaos.spark_analysis.read_lag import read_lag, reading, unseen_over_time
from kchaos.spark_analysis.report import render_report
from kchaos.spark_analysis.timeline import run_span, timeline
from tests.histories import HistoryBuilder

OTHER = "consumer-1"


def planted() -> HistoryBuilder:
    """Seconds since the start (bins of 1 s): a acked at 0, read by consumer-0 at 0 and consumer-1 at
    4.5; b read by consumer-0 at 1.0, before its ack at 1.5; c acked at 2, never read; a committed
    transaction's t1 acked at 3 and polled at 3.2; an aborted transaction's x acked at 3, never read; and
    a record of a topic no one reads during the run."""
    h = HistoryBuilder(step=0.0)
    h.send("out", 0, topic="kchaos-out")  # a topic no one reads during the run (an eos run's output)
    h.send("a", 0)
    h.read("a", 0)
    h.advance(1.0)
    h.invoke("b")
    h.read("b", 1)
    h.advance(0.5)
    h.ack("b", 1)
    h.advance(0.5)
    h.send("c", 2)
    h.advance(1.0)
    for txn, ends in (("t", TXN_COMMIT), ("u", TXN_ABORT)):
        h.event("producer-1", OK, TXN_BEGIN, key=txn)
        h.event("producer-1", OK, TXN_SEND, topic="kchaos", partition=1, offset=0 if txn == "t" else 2,
                key=txn, value=f"{txn}1")  # fmt: skip
        h.event("producer-1", OK, ends, key=txn)
    h.advance(0.2)
    h.read("t1", 0, partition=1)
    h.advance(1.3)
    h.read("a", 0, process=OTHER)
    return h


def test_each_reader_s_lag_is_the_time_from_acknowledgement_to_its_first_read(spark: SparkSession) -> None:
    history = planted().frame(spark)
    span = run_span(history)
    assert span is not None
    lag = read_lag(history, span)
    assert lag is not None and lag.width == 1 and lag.left_out == 0
    assert list(lag.readers) == [OTHER, "consumer-0"]  # the slowest first
    assert lag.readers[OTHER] == ([4], [4.5])
    seconds, lags = lag.readers["consumer-0"]
    assert seconds == [0, 1, 2, 3] and math.isnan(lags[2])  # nothing read in bin 2: the line breaks
    assert [round(lags[n], 6) for n in (0, 1, 3)] == [0.0, 0.0, 0.2]


def test_unseen_counts_what_no_reader_had_been_handed_yet(spark: SparkSession) -> None:
    history = planted().frame(spark)
    span = run_span(history)
    assert span is not None
    unseen = unseen_over_time(history, span)
    assert unseen is not None
    # a seen in bin 0; b acknowledged and seen in bin 1; c unseen from bin 2 on; t1 acked in bin 3 and
    # read in bin 3; the aborted transaction's x is no one's to read, and no one reads kchaos-out.
    assert unseen.seconds == [0, 1, 2, 3, 4] and unseen.unseen == [0, 0, 1, 1, 1]


def test_the_report_draws_both_and_says_when_no_reader_read(tmp_path: Path, spark: SparkSession) -> None:
    history = planted().frame(spark)
    drawn = timeline(history)
    assert drawn is not None
    results = {"verdict": "ok", "anomalies": {}, "faults": [], "summary": {}}
    page = render_report(results, {}, drawn, None, reading(history, drawn.span))
    assert 'id="plot-read-lag"' in page and 'id="plot-unseen"' in page
    writers_only = HistoryBuilder()
    writers_only.send("a", 0)
    alone = writers_only.frame(spark)
    alone_drawn = timeline(alone)
    assert alone_drawn is not None
    page = render_report(results, {}, alone_drawn, None, reading(alone, alone_drawn.span))
    assert 'id="reading-not-recorded"' in page and "plot-read-lag" not in page
