"""Which transaction protocol a producer's commit or abort used, in the `detail` of its `txn-commit` and
`txn-abort` invoke rows: the fact the KAFKA-17754 attacks turn on (protocol 1: a delayed EndTxn can land on
the producer's next transaction; protocol 2, KIP-890 part 2: the epoch is bumped per transaction, so it
cannot), recorded per EndTxn because a client may change protocol mid-run as the cluster's finalized
`transaction.version` changes.

The key says how the run knows, so a reader never takes a reading of source for an observation:

- `transaction_protocol_observed`: read from the client's own state just before the call. The Java client
  of 4.0+ (kchaos/compose/client/KchaosTransactions.java) keeps the flag its EndTxn request is built from,
  `TransactionManager.isTransactionV2Enabled()`: false caps the request at EndTxn v4 (protocol 1), true
  lifts the cap to v5+, the version that bumps the epoch (so read from `EndTxnRequest.Builder.build` in
  the kafka-clients 4.3.1 jar). Checked once on the wire: a 4.3.1 worker whose flag said 2, with its
  NetworkClient at debug, sent `END_TXN` with `apiVersion=5` to a 4.3.1 cluster.
- `transaction_protocol_derived`: not observed, derived from the client's code. A Java client before 4.0
  has no transaction V2 in its TransactionManager, so protocol 1. librdkafka's transactional producer sends
  EndTxn v0-1 only (`rd_kafka_EndTxnRequest` in src/rdkafka_request.c asks for versions 0 to 1, read at
  librdkafka commit 4c3b017, July 2026, after v2.15.0; librdkafka issue #5423, asking for KIP-890, was
  open then), so protocol 1 whatever the cluster offers. Checked once on the wire: librdkafka 2.16.0 with
  `debug=protocol` logged `Sent EndTxnRequest (v1, ...)` to a 4.3.1 cluster. A run does not turn that debug
  log on (it logs every request), so its rows say derived.
"""

from __future__ import annotations

from typing import Final

#: `detail` key: the protocol (1 or 2) as the client's own state said at the call.
TRANSACTION_PROTOCOL_OBSERVED: Final = "transaction_protocol_observed"
#: `detail` key: the protocol (1 or 2) derived from the client's code, not observed.
TRANSACTION_PROTOCOL_DERIVED: Final = "transaction_protocol_derived"
#: librdkafka's, derived from its source (see above).
LIBRDKAFKA_TRANSACTION_PROTOCOL: Final = 1
