"""The workloads a run can drive, by the names `--workload` takes: one owner for them, since the settings,
the fault specs (which workloads have a coordinator or group members to aim at), the processes' names and
the runner all branch on them.

- `sends`: plain producers and assigned readers;
- `group`: producers and the members of one consumer group;
- `txn`: transactional producers and readers at both isolation levels;
- `eos`: processors that consume in a group and write transactions carrying its offsets.
"""

from __future__ import annotations

from typing import Final, Literal

Workload = Literal["sends", "group", "txn", "eos"]

SENDS: Final = "sends"
GROUP: Final = "group"
TXN: Final = "txn"
EOS: Final = "eos"

#: Every workload, in the order `--help` lists them.
WORKLOADS: tuple[Workload, ...] = (SENDS, GROUP, TXN, EOS)
#: Workloads whose writers are transactional, so they have a transaction coordinator.
TRANSACTIONAL: tuple[Workload, ...] = (TXN, EOS)
#: Workloads whose readers are members of a consumer group, so they have a group coordinator.
IN_A_GROUP: tuple[Workload, ...] = (GROUP, EOS)
