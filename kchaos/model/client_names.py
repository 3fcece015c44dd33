"""The Kafka clients a run's producers can be, by the names `--client` takes, and the workloads each drives
so far: one owner, since the settings, the configuration's rules and the runner all branch on them.

- `librdkafka`: confluent-kafka threads inside the harness process (every workload), the one client the
  scenarios that hold group members back can drive;
- `java`: the release's own Java client (`kafka-clients`), each producer, group member and eos processor a
  process in a container of its own (kchaos/compose/client/: KchaosProducer.java, KchaosTransactions.java,
  KchaosGroupMember.java, KchaosEosProcessor.java), so what a Java application does under the same faults
  is what the history shows;
- `librdkafka-process`: librdkafka too, each producer, group member, eos processor and reader of `sends`
  and `txn` a process in a container of its own (kchaos/compose/rdkafka/*_worker.py, the Java workers'
  line protocols), so a fault can hit it and it has an interpreter of its own: the default
  (`DEFAULT_CLIENT`), since a client that is a process is what applications run and what a fault can
  reach.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from kchaos.model.releases import Release, buildable_lines
from kchaos.model.workload_names import EOS, GROUP, SENDS, TXN, Workload

Client = Literal["librdkafka", "java", "librdkafka-process"]

LIBRDKAFKA: Final = "librdkafka"
JAVA: Final = "java"
LIBRDKAFKA_PROCESS: Final = "librdkafka-process"

#: The client a run uses when `--client` is not given.
DEFAULT_CLIENT: Final = LIBRDKAFKA_PROCESS
#: Every client, in the order `--help` lists them.
CLIENTS: tuple[Client, ...] = (LIBRDKAFKA, JAVA, LIBRDKAFKA_PROCESS)
#: The clients whose producers are processes a fault can hit.
PROCESS_CLIENTS: tuple[Client, ...] = (JAVA, LIBRDKAFKA_PROCESS)
#: The workloads the Java client drives so far: its producer writes the `sends` workload, its transactional
#: producer (kchaos/compose/client/KchaosTransactions.java) the `txn` workload; in the `group` workload its
#: producers write and its consumers (kchaos/compose/client/KchaosGroupMember.java) are the group's members,
#: and in `eos` its processors (KchaosEosProcessor.java) too; the assigned readers of `sends` and `txn` are
#: processes too (KchaosReader.java).
JAVA_WORKLOADS: tuple[Workload, ...] = (SENDS, TXN, GROUP, EOS)
#: The workloads librdkafka processes drive so far: producers (kchaos/compose/rdkafka/worker.py) write
#: `sends`, transactional ones (txn_worker.py) `txn`, whose assigned readers are processes too
#: (reader_worker.py), and in `group` the members (group_worker.py), in `eos` the processors
#: (eos_worker.py).
LIBRDKAFKA_PROCESS_WORKLOADS: tuple[Workload, ...] = (SENDS, TXN, GROUP, EOS)


def client_refusal(
    client: str, workload: str, java_client_version: str | None = None, librdkafka_version: str | None = None
) -> str | None:
    """Why `--client` cannot drive `--workload` (or take `--java-client-version` or `--librdkafka-version`),
    with the fix; None when it can."""
    if java_client_version is not None and client != JAVA:
        return (
            f"java_client_version: --java-client-version chooses the Java client's release, and --client is "
            f"{client}: add --client java, or leave --java-client-version out"
        )
    if librdkafka_version is not None and client != LIBRDKAFKA_PROCESS:
        return (
            f"librdkafka_version: --librdkafka-version chooses the confluent-kafka release of the librdkafka "
            f"processes, and --client is {client} (the librdkafka threads run the harness's own): use "
            "--client librdkafka-process, or leave --librdkafka-version out"
        )
    if client == JAVA and workload not in JAVA_WORKLOADS:
        takes = " or ".join(f"--workload {name}" for name in JAVA_WORKLOADS)
        return (
            f"client: --client java drives only {takes} so far; --workload {workload} runs with "
            f"--client librdkafka-process (the default): leave --client out or use {takes}"
        )
    if client == LIBRDKAFKA_PROCESS and workload not in LIBRDKAFKA_PROCESS_WORKLOADS:
        takes = " or ".join(f"--workload {name}" for name in LIBRDKAFKA_PROCESS_WORKLOADS)
        return (
            f"client: --client librdkafka-process drives only {takes} so far; --workload {workload} "
            "runs with --client librdkafka (threads in the harness)"
        )
    return None


#: The oldest kafka-clients the Java workers compile against (their javadoc: APIs every release from 0.11
#: has; 0.11 brought idempotence and transactions).
OLDEST_JAVA_CLIENT = (0, 11)


#: The oldest confluent-kafka whose wheel installs in the librdkafka process image: the first with a wheel
#: for CPython 3.11, the image's Python (Debian bookworm's); 1.9.2 and older have none.
OLDEST_LIBRDKAFKA = (2, 0, 2)
#: A confluent-kafka release as PyPI names its final ones.
LIBRDKAFKA_RELEASE = re.compile(r"(\d{1,3})\.(\d{1,3})\.(\d{1,3})")


def check_librdkafka_version(value: str) -> str:
    """`value` if it is a confluent-kafka release from `OLDEST_LIBRDKAFKA` on, else a ValueError saying
    which; whether PyPI has it is asked when its image is built, before the run begins."""
    matched = LIBRDKAFKA_RELEASE.fullmatch(value.strip())
    oldest = ".".join(map(str, OLDEST_LIBRDKAFKA))
    if matched is None or tuple(int(part) for part in matched.groups()) < OLDEST_LIBRDKAFKA:
        raise ValueError(
            f"{value!r}: give a confluent-kafka release as digits.digits.digits, from {oldest} (the first "
            "with a wheel for the worker image's Python 3.11) on, e.g. 2.6.1; or leave --librdkafka-version "
            "out for the one kchaos runs with"
        )
    return value.strip()


def check_java_client_version(value: str) -> str:
    """`value` if kchaos builds a Java client image of it (a release line it builds, from 0.11), else a
    ValueError naming the lines."""
    release = Release.parse(value)
    if tuple(release.parts[:2]) not in buildable_lines() or tuple(release.parts[:2]) < OLDEST_JAVA_CLIENT:
        raise ValueError(
            f"kchaos builds no Java client of {value}: give a kafka-clients release from 0.11 to "
            f"{'.'.join(map(str, buildable_lines()[-1]))} (e.g. 3.9.2), or leave --java-client-version out "
            "for the cluster's own"
        )
    return release.text
