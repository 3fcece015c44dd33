"""The image recipe's shell logic, run in bash without Docker: which Debian mirror the base is bootstrapped
from, how `--broker-config` keys travel through KAFKA_* variables into server.properties, and the cluster id
the entrypoint formats storage with."""

from __future__ import annotations

import base64
import os
import re
import subprocess
from pathlib import Path

import pytest

from kchaos.harness.cluster_error import ClusterError
from kchaos.harness.node_env import broker_env_name, new_cluster_id

COMPOSE = Path(__file__).resolve().parent.parent / "kchaos" / "compose"
BUILD_ROOTFS = COMPOSE / "base" / "build-rootfs.sh"
ENTRYPOINT = COMPOSE / "kafka" / "entrypoint.sh"


def run_sourced(script: Path, call: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Sources `script` (which then defines its functions and does nothing else) and runs `call` in a clean
    environment holding only PATH and `env`; `args` are `call`'s "$1", "$2", ..."""
    return subprocess.run(
        ["bash", "-c", f'script=$1; shift; source "$script"; {call}', "bash", str(script), *args],
        env={"PATH": os.environ["PATH"], **env},
        capture_output=True,
        text=True,
        check=False,
        timeout=30,
    )


# --- the Debian mirror build-rootfs.sh bootstraps from ---------------------------------------------------


def apt_dir(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "apt"
    (root / "sources.list.d").mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def mirror_for(root: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return run_sourced(BUILD_ROOTFS, 'debian_mirror "$1"', env or {}, str(root))


def test_one_line_sources_give_the_first_main_debian_archive(tmp_path: Path) -> None:
    root = apt_dir(
        tmp_path,
        {
            "sources.list": (
                "# deb http://commented.example/debian bookworm main\n"
                "deb-src http://src.example/debian bookworm main\n"
                "deb http://security.debian.org/debian-security bookworm-security main\n"
                "deb [arch=amd64 signed-by=/usr/share/keyrings/debian.gpg] http://ftp.de.debian.org/debian/ "
                "bookworm-updates main\n"
                "deb [ arch=amd64 ] http://ftp.de.debian.org/debian/ bookworm main contrib  # the archive\n"
                "deb http://later.example/debian bookworm main\n"
            ),
            # sources.list.d comes after sources.list, as apt reads them.
            "sources.list.d/00-first.list": "deb http://from-list-d.example/debian bookworm main\n",
        },
    )

    result = mirror_for(root)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "http://ftp.de.debian.org/debian/\n"


def test_deb822_sources_give_the_first_enabled_main_debian_archive(tmp_path: Path) -> None:
    root = apt_dir(
        tmp_path,
        {
            # Sorts first, but a third-party archive: its suite is no Debian suite.
            "sources.list.d/a-nodesource.sources": (
                "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n"
            ),
            "sources.list.d/b-disabled.list.save": "deb http://not-read.example/debian bookworm main\n",
            "sources.list.d/debian.sources": (
                "Types: deb\n"
                "URIs: http://disabled.example/debian\n"
                "Suites: bookworm\n"
                "Components: main\n"
                "Enabled: no\n"
                "\n"
                "Types: deb-src\n"
                "URIs: http://src.example/debian\n"
                "Suites: bookworm\n"
                "Components: main\n"
                "\n"
                "Types: deb deb-src\n"
                "# http://snapshot.debian.org/archive/debian/20250520T000000Z\n"
                "URIs: https://mirror.example.org/debian\n"
                "  http://second.example/debian\n"
                "Suites: bookworm-updates bookworm\n"
                "Components: main contrib\n"
                "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n"
                "\n"
                "Types: deb\n"
                "URIs: http://deb.debian.org/debian-security\n"
                "Suites: bookworm-security\n"
                "Components: main\n"
            ),
        },
    )

    result = mirror_for(root)

    assert result.returncode == 0, result.stderr
    assert result.stdout == "https://mirror.example.org/debian\n"


def test_the_environment_overrides_the_hosts_mirror(tmp_path: Path) -> None:
    root = apt_dir(tmp_path, {"sources.list": "deb http://host.example/debian bookworm main\n"})

    result = mirror_for(root, {"KCHAOS_DEBIAN_MIRROR": "http://chosen.example/debian"})

    assert result.stdout == "http://chosen.example/debian\n"


def test_no_main_debian_archive_fails_naming_the_override(tmp_path: Path) -> None:
    root = apt_dir(
        tmp_path,
        {
            "sources.list": "deb http://security.debian.org/debian-security bookworm-security main\n",
            "sources.list.d/ubuntu.list": "deb http://archive.ubuntu.com/ubuntu jammy main\n",
        },
    )

    result = mirror_for(root)

    assert result.returncode != 0
    assert result.stdout == ""
    assert "KCHAOS_DEBIAN_MIRROR" in result.stderr


# --- --broker-config keys through KAFKA_* variables ------------------------------------------------------


def properties_from(env: dict[str, str]) -> dict[str, str]:
    """What the image's entrypoint writes to server.properties for the KAFKA_* variables in `env`."""
    result = run_sourced(ENTRYPOINT, "properties_from_env", env)
    assert result.returncode == 0, result.stderr
    return dict(line.split("=", 1) for line in result.stdout.splitlines())


def test_a_dashed_listener_name_arrives_with_one_dash() -> None:
    assert broker_env_name("listener.name.my-listener.x") == "KAFKA_LISTENER_NAME_MY___LISTENER_X"
    env = {"KAFKA_LISTENER_NAME_MY___LISTENER_X": "1"}
    assert properties_from(env) == {"listener.name.my-listener.x": "1"}


@pytest.mark.parametrize(
    "key",
    [
        "listener.name.my-listener.x",
        "log.flush.interval.messages",
        "some_key.with-dash",
        "a-b_c.d",
        "sasl.mechanism.inter.broker.protocol",
        "listener.name.client.ssl.keystore.location",
        "x_y_z-w-v.u",
    ],
)
def test_broker_config_keys_survive_the_trip_into_server_properties(key: str) -> None:
    env = {broker_env_name(key): "value=with=equals", "KAFKA_HEAP_OPTS": "-Xmx1g"}

    assert properties_from(env) == {key: "value=with=equals"}


@pytest.mark.parametrize("key", ["a_.b", "a._b", "a..b", "a__b", "a-.b", "Upper.Case", "trailing.", "sp ace"])
def test_keys_the_contract_cannot_carry_back_are_refused(key: str) -> None:
    with pytest.raises(ClusterError, match="cannot be passed"):
        broker_env_name(key)


# --- the cluster id the entrypoint formats storage with --------------------------------------------------


def is_kraft_cluster_id(cluster_id: str) -> bool:
    """The rule `new_cluster_id` follows: 16 bytes in unpadded URL-safe base64, with no dash."""
    padded = cluster_id + "=="
    return (
        re.fullmatch(r"[A-Za-z0-9_]{22}", cluster_id) is not None
        and base64.urlsafe_b64encode(base64.urlsafe_b64decode(padded)).decode() == padded
    )


def entrypoint_cluster_id(env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return run_sourced(ENTRYPOINT, "cluster_id", env)


def test_the_default_cluster_id_is_one_kafka_accepts() -> None:
    result = entrypoint_cluster_id({})

    assert result.returncode == 0, result.stderr
    assert is_kraft_cluster_id(result.stdout.strip()), result.stdout


def test_the_given_cluster_id_is_used() -> None:
    cluster_id = new_cluster_id()

    assert entrypoint_cluster_id({"CLUSTER_ID": cluster_id}).stdout == cluster_id + "\n"


@pytest.mark.parametrize("cluster_id", [new_cluster_id(), "-L6g3nShTeMCtKaX86swQw"])
def test_storage_is_formatted_with_the_cluster_id_as_the_options_value(cluster_id: str) -> None:
    """An id starting with '-' (as one random id in 64 did before ids were drawn without dashes) made the
    storage tool take it for an option and refuse to format."""
    # A stand-in `java` prints the arguments it was given, one a line.
    result = run_sourced(
        ENTRYPOINT,
        'java() { printf "%s\\n" "$@"; }; classpath=/cp; log4j=-Dl; format_storage "$1" "$(cluster_id)"',
        {"CLUSTER_ID": cluster_id},
        "/etc/kafka/server.properties",
    )

    assert result.returncode == 0, result.stderr
    args = result.stdout.splitlines()
    assert f"--cluster-id={cluster_id}" in args
    assert args[args.index("--config") + 1] == "/etc/kafka/server.properties"


@pytest.mark.parametrize(
    ("quorum", "joining"),
    [
        ("controller.quorum.bootstrap.servers=kafka-101:9093", True),
        ("controller.quorum.voters=101@kafka-101:9093", False),
    ],
)
def test_a_controller_joining_a_dynamic_quorum_is_formatted_as_no_initial_voter(
    tmp_path: Path, quorum: str, joining: bool
) -> None:
    """A spare controller knows the quorum by its bootstrap servers (KIP-853) and must start as an
    observer: the storage tool refuses to format such a controller without being told it is none of the
    initial voters. A controller of a static quorum is formatted as before."""
    conf = tmp_path / "server.properties"
    conf.write_text(f"process.roles=controller\nnode.id=104\n{quorum}\n", encoding="utf-8")
    result = run_sourced(
        ENTRYPOINT,
        'java() { printf "%s\\n" "$@"; }; classpath=/cp; log4j=-Dl; format_storage "$1" "$(cluster_id)"',
        {},
        str(conf),
    )

    assert result.returncode == 0, result.stderr
    assert ("--no-initial-controllers" in result.stdout.splitlines()) is joining


def test_a_zookeeper_node_keeps_its_data_in_the_container_on_the_given_port() -> None:
    result = run_sourced(ENTRYPOINT, "zookeeper_config", {"ZOOKEEPER_CLIENT_PORT": "2281"})

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "dataDir=/var/lib/zookeeper" in lines and "clientPort=2281" in lines


def test_the_compose_files_cluster_id_is_one_kafka_accepts() -> None:
    found = re.search(r"^\s*CLUSTER_ID:\s*(\S+)\s*$", (COMPOSE / "docker-compose.yml").read_text(), re.M)

    assert found is not None
    assert is_kraft_cluster_id(found.group(1))
