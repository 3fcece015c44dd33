"""The columns of `replicas.parquet`: one row per record of one broker's copy of a partition log.

The cluster side writes it (`kchaos.harness.replicas` dumps every replica after healing) and the judge reads
it (`replica-divergence` compares replicas offset by offset), so the schema lives in the model both wings
read, and reading a run directory never loads the cluster's libraries."""

from __future__ import annotations

import pyarrow as pa

REPLICA_SCHEMA = pa.schema(
    [
        ("broker", pa.int32()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("key", pa.string()),
        ("value", pa.string()),
    ]
)
