"""What a run against a cluster kchaos did not start (`--bootstrap`) made there, deleted: its topics and
its consumer groups. The run's end does it (`kchaos.harness.existing_cluster`), and after a run killed
outright its watchdog does (`kchaos.harness.watchdog`), from what the run told it; neither imports the
other for it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from contextlib import suppress

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

log = logging.getLogger(__name__)


def remove_run_leftovers(bootstrap: str, run_id: str, topics: Sequence[str]) -> list[str]:
    """Deletes `topics` and run `run_id`'s consumer groups (`kchaos-<run id>-...`) from the cluster at
    `bootstrap`: what a run against a cluster kchaos did not start made there. Best effort (a cluster that
    does not answer keeps them, logged); returns what was deleted. The run's end calls it, and the watchdog
    after a run killed outright."""
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    deleted: list[str] = []
    futures = dict(admin.delete_topics(list(topics), operation_timeout=30)) if topics else {}
    with suppress(KafkaException):
        listed = admin.list_consumer_groups().result(30)
        groups = [g.group_id for g in listed.valid if g.group_id.startswith(f"kchaos-{run_id}-")]
        if groups:
            futures.update(admin.delete_consumer_groups(groups, request_timeout=30))
    for name, future in futures.items():
        try:
            future.result(60)
            deleted.append(name)
            log.info("deleted %s from %s", name, bootstrap)
        except KafkaException as exc:
            log.warning("could not delete %s from %s: %s", name, bootstrap, exc)
    return deleted
