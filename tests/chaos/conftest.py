"""The chaos suite uses the kchaos pytest plugin as a user would; here only what this project adds:
every run must leave no container or network behind (unless --kchaos-keep-cluster asked to keep them)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.cluster.conftest import assert_no_leftovers


@pytest.fixture(autouse=True)
def nothing_left_behind(pytestconfig: pytest.Config) -> Iterator[None]:
    yield
    if not pytestconfig.getoption("--kchaos-keep-cluster"):
        assert_no_leftovers()
