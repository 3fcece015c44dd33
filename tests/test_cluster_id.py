"""KRaft cluster ids: every one the harness draws must be one `kafka-storage format` accepts."""

from __future__ import annotations

import base64
import uuid

from kchaos.harness.node_env import new_cluster_id

LEADING_DASH = uuid.UUID(bytes=bytes([0xF8]) + bytes(15))  # first 6 bits 111110: "-" in URL-safe base64
INNER_DASH = uuid.UUID(bytes=bytes([0x03, 0xE0]) + bytes(14))  # second 6 bits 111110
CLEAN = uuid.UUID(bytes=bytes(range(1, 17)))


def test_an_id_with_a_dash_is_drawn_again() -> None:
    """A leading dash made `kafka-storage format --cluster-id` take the id for an option: a cluster start
    in 64 failed before any broker ran."""
    draws = iter([LEADING_DASH, INNER_DASH, CLEAN])
    assert base64.urlsafe_b64encode(LEADING_DASH.bytes).decode().startswith("-")
    assert "-" in base64.urlsafe_b64encode(INNER_DASH.bytes).decode()[1:]

    cluster_id = new_cluster_id(lambda: next(draws))

    assert cluster_id == base64.urlsafe_b64encode(CLEAN.bytes).decode().rstrip("=")
    assert next(draws, None) is None  # both dashed ids were drawn and refused


def test_ids_are_22_characters_of_unpadded_url_safe_base64() -> None:
    for _ in range(500):
        cluster_id = new_cluster_id()
        assert len(cluster_id) == 22 and "-" not in cluster_id and "=" not in cluster_id
        assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
