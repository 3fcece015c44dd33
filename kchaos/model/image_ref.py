"""The run's image, checked before anything starts: a `--kafka-image` Docker can parse, or a release kchaos
knows to build.

Both used to fail late: a reference Docker cannot parse came back as a raw HTTP 400 from the engine after
the run directory was made, and an unknown release as a screenful of Maven output once the build began.
The reference grammar is the Docker distribution project's (`reference/regexp.go`).
"""

from __future__ import annotations

import re

from kchaos.model.releases import check_buildable

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_HOST_PART = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_HOST_PART}(?:\.{_HOST_PART})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
_NAME = rf"(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*"
#: A whole reference; the name part is also at most 255 characters (`NAME_MAX`).
REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?")
NAME_MAX = 255


def check_image_reference(value: str) -> str:
    """`value` if Docker can parse it as an image reference, else a ValueError saying what one looks like."""
    found = REFERENCE.fullmatch(value)
    if found is None or len(found.group("name")) > NAME_MAX:
        raise ValueError(
            f"{value!r} is not an image reference; write [REGISTRY/]NAME[:TAG][@DIGEST] with a lowercase "
            "name, e.g. apache/kafka:4.1.1 or kchaos/kafka:4.3.1"
        )
    return value


def check_image(image: str | None, kafka_version: str) -> None:
    """Refuses an image reference Docker cannot parse, or without one a release kchaos cannot build; the
    message names the field, as a setting's own check would."""
    try:
        if image is not None:
            check_image_reference(image)
    except ValueError as exc:
        raise ValueError(f"kafka_image (--kafka-image): {exc}") from None
    try:
        if image is None:  # built here, from the jars of a release Maven Central has
            check_buildable(kafka_version)
    except ValueError as exc:
        raise ValueError(f"kafka_version (--kafka-version): {exc}") from None
