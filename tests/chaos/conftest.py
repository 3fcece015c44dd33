"""The chaos suite uses the kchaos pytest plugin as a user would; here only what this project adds:
every run must leave no container or network behind."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.conftest import assert_no_leftovers


@pytest.fixture(autouse=True)
def nothing_left_behind() -> Iterator[None]:
    yield
    assert_no_leftovers()
