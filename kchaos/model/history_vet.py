"""The last look at a run's history before a judge reads it: a file, Parquet, with rows, every one a row.

`history_path` makes sure the history is a file and converts a crashed run's staging file (refusing a
damaged one); this reads the result once more, a few columns at a time, since a history.parquet can be
damaged or hand-made too.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from kchaos.model.history_files import HistoryCorrupt, HistoryNotAFile, history_path
from kchaos.model.history_rows import REQUIRED as REQUIRED_COLUMNS
from kchaos.model.history_rows import first_bad_row, first_repeated_index


def vet_history(run_dir: Path) -> Path:
    """`history_path`, refusing a history no checker can judge: a file that is not Parquet, a column or a
    row that is not a history's, or no rows at all (a judge of an empty history spent its time in Spark
    only to say something else). Read in batches of a few columns, so a long run's history costs little."""
    path = history_path(run_dir)
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise HistoryNotAFile(path, f"is not a Parquet file ({exc})") from exc
    missing = [name for name in REQUIRED_COLUMNS if name not in parquet.schema_arrow.names]
    if missing:
        raise HistoryNotAFile(path, f"has no column {', '.join(missing)}, so it is no kchaos history")
    if parquet.metadata.num_rows == 0:
        raise HistoryNotAFile(path, "holds no rows: the run recorded nothing, so there is nothing to check")
    wanted = [
        name for name in (*REQUIRED_COLUMNS, "partition", "offset") if name in parquet.schema_arrow.names
    ]
    seen = 0
    for batch in parquet.iter_batches(batch_size=1 << 20, columns=wanted):
        bad = first_bad_row(pa.Table.from_batches([batch]))
        if bad is not None:
            raise HistoryCorrupt(path, seen + bad[0] + 1, bad[1], where="row")
        seen += batch.num_rows
    repeat = first_repeated_index(parquet.read(columns=["index"]).column("index"))  # 8 bytes a row
    if repeat is not None:
        raise HistoryCorrupt(path, repeat[0] + 1, repeat[1], where="row")
    return path
