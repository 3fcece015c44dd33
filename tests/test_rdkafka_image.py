"""The librdkafka worker's image is rebuilt when what it holds changes (its Dockerfile, the worker, the
confluent-kafka version, the base) and only then: a stale image would run yesterday's worker."""

from __future__ import annotations

from pathlib import Path

import pytest

from kchaos.harness import rdkafka_image
from kchaos.harness.rdkafka_image import WORKER, rdkafka_recipe, rdkafka_tag


def test_the_recipe_changes_with_the_version_the_base_and_the_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    recipe = rdkafka_recipe("2.16.1", "base")
    assert recipe == rdkafka_recipe("2.16.1", "base")
    assert recipe != rdkafka_recipe("2.16.2", "base") and recipe != rdkafka_recipe("2.16.1", "other")
    changed = tmp_path / "worker.py"
    changed.write_text(WORKER.read_text() + "\n# changed\n")
    monkeypatch.setattr(rdkafka_image, "WORKERS_DIR", tmp_path)
    assert rdkafka_recipe("2.16.1", "base") != recipe
    (tmp_path / "txn_worker.py").write_text("# a mode's module\n")
    (tmp_path / "__init__.py").write_text("")
    assert rdkafka_image.worker_modules() == [tmp_path / "txn_worker.py", changed]


def test_the_image_is_named_by_the_confluent_kafka_version_the_harness_runs() -> None:
    assert rdkafka_tag(rdkafka_image.confluent_kafka_version()).startswith("kchaos/rdkafka-client:2.")
    assert WORKER.is_file() and WORKER.name == "worker.py"
    assert WORKER in rdkafka_image.worker_modules()
