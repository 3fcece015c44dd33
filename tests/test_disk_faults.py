"""`slow-disk` and `replace-disk` before any container: their options refused with the fix, and the image
entrypoint's disk swap emptying what a swapped disk loses and keeping what it keeps (sourced, as the image
runs it). The faults on real brokers: tests/cluster/test_disk_faults.py."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kchaos.harness.slow_disk import Slowness
from kchaos.model.config import ConfigError, load_config
from tests.test_image_recipe import ENTRYPOINT


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("slow-disk:ms=0", "ms=0 with tail=0 and share=0 slows nothing"),
        ("slow-disk:ms=0:tail=500", "ms=0 with tail=500 and share=0 slows nothing"),
        ("slow-disk:ms=0:share=5", "ms=0 with tail=0 and share=5 slows nothing"),
        ("slow-disk:on=read", "on must be one of sync, write"),
        ("slow-disk:ms=60001", "ms must be from 0 to 60000"),
        ("replace-disk:disk=metadata", "disk must be one of all, data"),
    ],
)
def test_a_disk_fault_kchaos_cannot_apply_is_refused_naming_the_fix(spec: str, says: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config(nemesis=spec)
    assert says in str(refused.value)


def test_a_disk_fault_needs_an_image_kchaos_built() -> None:
    for spec in ("slow-disk", "replace-disk"):
        with pytest.raises(ConfigError):
            load_config(nemesis=spec, kafka_image="apache/kafka:4.1.1")


def test_the_library_reads_the_slowness_as_one_line() -> None:
    assert Slowness("write", 5, 500, 1).line() == "write 5 500 1\n"


def swap(tmp_path: Path, mode: str) -> tuple[str, list[str]]:
    """Applies a pending swap of `mode` to a log dir holding a partition, the KRaft metadata log, the
    storage's identity and a hidden lock file; returns the report and what is left."""
    data = tmp_path / "data"
    for path, text in (
        ("kchaos-0/00000000000000000000.log", "records"),
        ("__cluster_metadata-0/00000000000000000000.log", "metadata"),
        ("meta.properties", "node.id=1"),
        (".lock", ""),
    ):
        (data / path).parent.mkdir(parents=True, exist_ok=True)
        (data / path).write_text(text, encoding="utf-8")
    (tmp_path / "pending").write_text(f"{mode}\n", encoding="utf-8")
    script = (
        f"source {ENTRYPOINT}; disk_swap_pending={tmp_path}/pending; disk_swap_report={tmp_path}/report; "
        f"apply_disk_swap {data}"
    )
    subprocess.run(["bash", "-c", script], check=True)
    assert not (tmp_path / "pending").exists(), "a swap is applied once"
    return (tmp_path / "report").read_text(encoding="utf-8"), sorted(p.name for p in data.iterdir())


def test_a_swapped_disk_is_empty_and_a_swapped_data_disk_keeps_the_metadata_log(tmp_path: Path) -> None:
    (tmp_path / "all").mkdir()
    report, left = swap(tmp_path / "all", "all")
    assert left == [] and report.split()[:2] == ["all", "4"]
    (tmp_path / "data").mkdir()
    report, left = swap(tmp_path / "data", "data")
    assert left == ["__cluster_metadata-0", "meta.properties"] and report.split()[:2] == ["data", "2"]
