"""`--spark-remote` and `kchaos spark-server`: a check on a Spark Connect server judges a run exactly as a
check in a JVM of its own does, and a malformed URL is refused before anything starts.

The server test starts the real server (`kchaos spark-server`, PySpark's own Spark Connect server) once for
the module, checks the same run directory on it and locally, and stops it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from pyspark.sql import SparkSession

from kchaos.checkers.passes.frames import OtherRunRead, load_history, require_same_history
from kchaos.checkers.runtime.spark_server import LOOPBACK, is_listening, server_command
from kchaos.harness.kafka_node import free_port
from kchaos.model.config import ConfigError, load_config
from kchaos.model.history import HistoryWriter
from kchaos.model.run_files import RunDir
from kchaos.model.spark_settings import spark_url
from kchaos.runner.cli import main
from tests.histories import HistoryBuilder

KCHAOS = str(Path(sys.executable).parent / "kchaos")


def test_a_spark_connect_url_is_where_the_check_runs_and_a_malformed_one_is_refused_by_name() -> None:
    assert spark_url("local[2]", None) == "local[2]"
    assert spark_url("local[2]", "sc://127.0.0.1:15002") == "sc://127.0.0.1:15002"
    assert load_config(spark_remote="sc://spark.example:15002/;user_id=k", duration=60).spark_url == (
        "sc://spark.example:15002/;user_id=k"
    )
    with pytest.raises(ConfigError, match=r"spark_remote: 'spark://host:7077' is not a Spark Connect URL"):
        load_config(spark_remote="spark://host:7077", duration=60)
    done = CliRunner().invoke(main, ["check", ".", "--spark-remote", "127.0.0.1:15002"])
    assert (
        done.exit_code == 2 and "--spark-remote: '127.0.0.1:15002' is not a Spark Connect URL" in done.output
    )


def test_the_server_listens_on_loopback_alone_with_the_checks_settings() -> None:
    command = server_command(15009, "2g")
    settings = dict(command[i + 1].split("=", 1) for i, word in enumerate(command) if word == "--conf")
    assert settings["spark.connect.grpc.binding.address"] == LOOPBACK
    assert settings["spark.connect.grpc.binding.port"] == "15009"
    assert settings["spark.sql.shuffle.partitions"] == "4" and settings["spark.ui.enabled"] == "false"
    assert settings["spark.python.sql.dataFrameDebugging.enabled"] == "false"  # static: a session cannot
    assert settings["spark.driver.host"] == settings["spark.driver.bindAddress"] == LOOPBACK
    assert command[command.index("--driver-memory") + 1] == "2g"


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen([KCHAOS, "spark-server", "--port", str(port)], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        deadline = time.monotonic() + 180
        while True:
            assert process.poll() is None, process.communicate()[0][-3000:]
            if is_listening(port):
                break
            assert time.monotonic() < deadline, "the Spark Connect server did not listen within 180 s"
            time.sleep(1)
        yield f"sc://{LOOPBACK}:{port}"
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _run_dir(path: Path) -> RunDir:
    """Six acknowledged sends; the final read finds all but offset 2: one lost write."""
    files = RunDir(path)
    files.history.mkdir(parents=True)
    config = {"run_id": path.name, "acks": "all", "min_insync_replicas": 2, "replication_factor": 3,
              "unclean_leader_election": False, "idempotence": True}  # fmt: skip
    files.config.write_text(json.dumps(config), encoding="utf-8")
    writer = HistoryWriter(files, path.name)
    history = HistoryBuilder(run_id=path.name)
    written = history.sends(6)
    history.final_reads(sent for sent in written if sent[1] != 2)
    history.replay(writer)
    writer.finish()
    return files


def _check(files: RunDir, *options: str) -> dict[str, object]:
    done = subprocess.run([KCHAOS, "check", str(files.path), *options], capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr  # the lost write is a violation
    results: dict[str, object] = json.loads(files.results.read_text(encoding="utf-8"))
    return results


def test_a_check_on_the_server_judges_the_run_as_a_local_check_does(server: str, tmp_path: Path) -> None:
    remote = _check(_run_dir(tmp_path / "remote"), "--spark-remote", server)
    local = _check(_run_dir(tmp_path / "local"))

    def judged(results: dict[str, object]) -> tuple[object, ...]:
        anomalies = results["anomalies"]
        assert isinstance(anomalies, dict)
        counts = {name: (found["count"], found["verdict"]) for name, found in anomalies.items()}
        return results["verdict"], results["lost"], counts

    assert judged(remote) == judged(local)
    assert remote["verdict"] == "violation" and remote["anomalies"]["lost-write"]["count"] == 1  # type: ignore[index]
    assert (tmp_path / "remote" / "report.html").is_file()


def test_a_relative_run_directory_is_the_one_the_server_reads(server: str, tmp_path: Path) -> None:
    """`kchaos check rel2 --spark-remote ...` used to hand the server `rel2`, which it resolved in its own
    working directory and so judged another run (or none) as this one."""
    files = _run_dir(tmp_path / "rel2")
    done = subprocess.run([KCHAOS, "check", "rel2", "--spark-remote", server], capture_output=True,
                          text=True, timeout=600, check=False, cwd=tmp_path)  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    results = json.loads(files.results.read_text(encoding="utf-8"))
    assert results["run_id"] == "rel2" and results["anomalies"]["lost-write"]["count"] == 1


def test_a_history_read_elsewhere_than_the_run_named_is_refused_naming_both(
    spark: SparkSession, tmp_path: Path
) -> None:
    """A server that sees other files at the same path (another machine, a container) reads another run:
    what it read is compared with what this machine holds there, and a difference is refused."""
    named = _run_dir(tmp_path / "named")
    other = _run_dir(tmp_path / "other")
    require_same_history(load_history(spark, named.path), named.path, "sc://127.0.0.1:1")
    with pytest.raises(OtherRunRead, match=r"read another history .*run other\) than this machine holds "
                       r"there \(\d+ rows of run named\)"):  # fmt: skip
        require_same_history(load_history(spark, other.path), named.path, "sc://127.0.0.1:1")


def test_the_history_is_handed_to_spark_by_its_absolute_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _run_dir(tmp_path / "rel2")
    monkeypatch.chdir(tmp_path)
    read: list[str] = []

    class Reader:
        def schema(self, _: object) -> Reader:
            return self

        def parquet(self, path: str) -> None:
            read.append(path)

    class Session:
        read = Reader()

    load_history(Session(), Path("rel2"))  # type: ignore[arg-type]
    assert read == [str(tmp_path / "rel2" / "history" / "history.parquet")]
