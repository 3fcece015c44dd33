"""Every field a fault's start or stop row records is a field of its kind's typed record: a fault whose
class has the wrong record fails when it starts on a real cluster (a TypeError in the middle of a run), so
this holds each class, its bases included, to its record without one."""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import fields

import pytest

from kchaos.model.fault_record import FaultRecord
from kchaos.nemesis.carriers import fault_classes
from kchaos.nemesis.fault import Fault

#: What a `**` spread in a record call holds, other than `**extra` passed on by a class's own `record`: a
#: restarted broker's registration wait (`Fault.await_sessions_expired`, spread by the crash-like faults).
SPREAD_FIELDS = {"registrations_expired"}


def recorded_fields(cls: type[Fault]) -> set[str]:
    """The keywords every `self.record(...)` / `super().record(...)` in `cls` and its bases passes; a
    `**` spread stands for `SPREAD_FIELDS`."""
    found: set[str] = set()
    for klass in cls.__mro__:
        if not (isinstance(klass, type) and issubclass(klass, Fault)) or klass is Fault:
            continue
        tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("self.record", "super().record"):
                for keyword in node.keywords:
                    if keyword.arg is not None:
                        found.add(keyword.arg)
                    elif ast.unparse(keyword.value) != "extra":  # `**extra` passes its caller's fields on
                        found |= SPREAD_FIELDS
    return found


@pytest.mark.parametrize(("key", "cls"), sorted(fault_classes().items()), ids=lambda v: str(v))
def test_what_a_fault_records_is_its_records_fields(key: tuple[str, str], cls: type[Fault]) -> None:
    record = cls.RECORD
    assert issubclass(record, FaultRecord)
    known = {field.name for field in fields(record)}
    assert recorded_fields(cls) <= known, f"{cls.__name__} records {recorded_fields(cls) - known}"


def test_the_scan_finds_a_field_its_record_lacks() -> None:
    class Careless(Fault):
        def start(self) -> FaultRecord:
            return self.record(misspelt=1)

    assert "misspelt" in recorded_fields(Careless)
    assert "misspelt" not in {field.name for field in fields(Careless.RECORD)}
