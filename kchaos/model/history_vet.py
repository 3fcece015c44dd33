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
from kchaos.model.history_schema import SCHEMA


def _kind(kind: pa.DataType) -> str:
    """What a column's values are, as far as reading them goes: whole numbers, numbers or text."""
    if pa.types.is_dictionary(kind):
        return _kind(kind.value_type)
    if pa.types.is_integer(kind):
        return "integer"
    if pa.types.is_floating(kind):
        return "number"
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return "text"
    return str(kind)


#: The kinds a column of each kind of the writer's schema may be read from (a whole number is a number).
_ACCEPTED = {"integer": {"integer"}, "number": {"integer", "number"}, "text": {"text"}}


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
    for name in parquet.schema_arrow.names:
        if name not in SCHEMA.names:
            continue
        found, wanted = parquet.schema_arrow.field(name).type, SCHEMA.field(name).type
        if _kind(found) not in _ACCEPTED[_kind(wanted)]:
            raise HistoryNotAFile(
                path,
                f"has column {name} of type {found}, where a history's is {wanted}: it is no kchaos history",
            )
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
