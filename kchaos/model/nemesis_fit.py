"""Whether a run's faults fit the run: every one runs on its Kafka release, `--fault-overlap` has two faults
it can overlap, the image carries what the faults need, a mix can draw every kind it names, and each fault
finds in the cluster's shape what it aims at.

The configuration asks this once, as it validates, so a nemesis that cannot run is refused with the fix
before any container starts. Each fault's own checks are its definition's (`kchaos.model.faults`).
"""

from __future__ import annotations

from typing import Protocol

from kchaos.model.fault_definition import FaultSpec, RunShape
from kchaos.model.fault_mix import mix_of, mix_refusal
from kchaos.model.fault_options import SpecError
from kchaos.model.fault_plan import PlanSettings, overlap_refusal, requested_faults, without_refusal
from kchaos.model.fault_spec import check_cluster, fault_release_refusal, parse_spec
from kchaos.model.fault_table import FAULTS
from kchaos.model.fault_triggers import trigger_refusal


class NemesisSettings(RunShape, PlanSettings, Protocol):
    """What the fit depends on: the run's shape, its plan's settings, its parsed faults, its release and
    image (`RunConfig` has them all)."""

    @property
    def faults(self) -> tuple[FaultSpec, ...]: ...
    @property
    def kafka_version(self) -> str: ...
    @property
    def kafka_image(self) -> str | None: ...


def nemesis_refusal(settings: NemesisSettings, kchaos_image: bool) -> str | None:
    """Why the run's faults cannot run in it, with the fix; None when they can. `kchaos_image`: the
    brokers run an image kchaos builds (which carries the sync journal, the clock shift, the full disk)."""
    named = {parse_spec(text).name for text in requested_faults(settings)}
    refused = (
        fault_release_refusal(named, settings.kafka_version)
        or overlap_refusal(settings.fault_overlap, named)
        or without_refusal(settings)
    )
    if refused is not None:
        return refused
    needing = sorted(name for name in named if FAULTS[name].needs_kchaos_image)
    if needing and not kchaos_image:
        return (
            f"nemesis: {', '.join(needing)} needs an image kchaos builds, which journals what the "
            f"brokers synced to disk; --kafka-image {settings.kafka_image} has no such journal: leave "
            "--kafka-image out"
        )
    mix = mix_of(settings.nemesis)
    refused = None if mix is None else mix_refusal(mix, settings)
    if refused is not None:
        return f"nemesis: {refused}"
    states = mix.triggers if mix is not None else tuple(spec.when for spec in settings.faults)
    holds = any(name == "hold" for name in named)
    for state in states:
        refused = trigger_refusal(state, settings.workload, request_hold=holds)
        if refused is not None:
            return f"nemesis: {refused}"
    for spec in settings.faults:
        try:
            check_cluster(spec, settings)
        except SpecError as exc:
            return f"nemesis: {exc}"
    return None
