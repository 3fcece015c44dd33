"""A long-lived local Spark Connect server for checks: `kchaos spark-server`, used with `--spark-remote`.

Every `kchaos check` (and the check at the end of every run) starts a JVM of its own, and a JVM that has
just started plans and compiles the checkers' queries slowly: most of an ordinary run's check is that, not
the history. A server started once and kept running does that work once; each check then only connects
(PySpark's Spark Connect client, no JVM in the checking process). The server is PySpark's own
(`org.apache.spark.sql.connect.service.SparkConnectServer`, in the jars PySpark ships), run in local mode
with the settings a check's local session gets, and listening on loopback only.
"""

from __future__ import annotations

import os
import socket
import threading
from contextlib import closing
from pathlib import Path

import pyspark

from kchaos.checkers.runtime.session import (
    LOCAL_GC_OPTION,
    LOOPBACK,
    LOOPBACK_DRIVER_CONF,
    SQL_CONF,
    STATIC_CONF,
    log4j2_file,
)
from kchaos.model.config import DEFAULT_DRIVER_MEMORY, DEFAULT_SPARK_MASTER
from kchaos.model.spark_settings import SPARK_REMOTE_SCHEME

SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"


def _spark_home() -> Path:
    """The Spark distribution PySpark ships (its bin/spark-submit and jars)."""
    return Path(pyspark.__file__).parent


def is_listening(port: int) -> bool:
    """Whether something accepts connections on loopback `port`: a started server is ready once it does."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        return sock.connect_ex((LOOPBACK, port)) == 0


#: How long a check waits for a Spark Connect server to accept a connection before saying none answers.
ANSWER_SECONDS = 5.0


def answer_problem(url: str, timeout: float = ANSWER_SECONDS) -> str | None:
    """Why nothing accepts a connection at the Spark Connect URL `url` (`sc://HOST:PORT...`) within
    `timeout` seconds, or None when something does. The name is looked up inside the bound too (a name
    that resolves nowhere can take the resolver longer than the connection), so this returns in time."""
    host, _, rest = url.removeprefix(SPARK_REMOTE_SCHEME).partition(":")
    port = int(rest.split("/", 1)[0])
    outcome: list[str | None] = []

    def connect() -> None:
        try:
            socket.create_connection((host, port), timeout=timeout).close()
            outcome.append(None)
        except OSError as exc:
            outcome.append(exc.strerror or str(exc) or type(exc).__name__)

    trying = threading.Thread(target=connect, name="spark-remote-probe", daemon=True)
    trying.start()
    trying.join(timeout)
    return outcome[0] if outcome else "no answer"


def port_problem(port: int) -> str | None:
    """Why a server cannot listen on loopback `port`, or None when it can: asked by binding it as the
    server would, so a busy port is refused by name rather than by the JVM's trace."""
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def server_url(port: int) -> str:
    """What `--spark-remote` takes for the server on `port` of this machine."""
    return f"{SPARK_REMOTE_SCHEME}{LOOPBACK}:{port}"


def server_command(port: int, driver_memory: str = DEFAULT_DRIVER_MEMORY) -> list[str]:
    """spark-submit starting the server in the foreground on loopback `port`, local mode on two threads."""
    conf = {
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.connect.grpc.binding.port": str(port),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.default.parallelism": "2",
        **SQL_CONF,
        **STATIC_CONF,
        **LOOPBACK_DRIVER_CONF,
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{log4j2_file()} {LOCAL_GC_OPTION}",
    }
    settings = [item for key, value in conf.items() for item in ("--conf", f"{key}={value}")]
    return [
        str(_spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS,
        "--name", "kchaos Spark Connect", "--master", DEFAULT_SPARK_MASTER, "--driver-memory", driver_memory,
        *settings, "spark-internal",
    ]  # fmt: skip


def server_environment() -> dict[str, str]:
    """The process environment for the server: this one's, with the Spark distribution PySpark ships as its
    home (its driver binds to loopback by `server_command`'s settings)."""
    return {**os.environ, "SPARK_HOME": str(_spark_home())}
