"""Which class carries out each fault: every nemesis module says so for its own faults (`CARRIES_OUT`, keyed
by the fault's name in `kchaos.model.faults` and what a spec of it aims at), and they are found here, so no
list of classes is kept by hand: `kill:target=zookeeper` is ZooKeeper's outage, `kill:target=producer-0` a
client process's crash, `kill` a broker's.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache

from kchaos import nemesis
from kchaos.model.fault_definition import Aim, FaultSpec
from kchaos.model.fault_table import FAULTS
from kchaos.nemesis.fault import Carriers, Fault


@cache
def fault_classes() -> Carriers:
    """Every nemesis module's `CARRIES_OUT`, merged; a fault carried out by two classes is a mistake."""
    found: dict[tuple[str, Aim], type[Fault]] = {}
    for info in pkgutil.iter_modules(nemesis.__path__):
        module = importlib.import_module(f"{nemesis.__name__}.{info.name}")
        carries: Carriers = getattr(module, "CARRIES_OUT", {})
        for key, cls in carries.items():
            if key in found:
                raise TypeError(f"{key} is carried out by both {found[key].__name__} and {cls.__name__}")
            found[key] = cls
    return found


def fault_class(spec: FaultSpec) -> type[Fault]:
    """The class that carries out `spec`, as aimed by its target."""
    return fault_classes()[(spec.name, FAULTS[spec.name].aim(dict(spec.options)))]
