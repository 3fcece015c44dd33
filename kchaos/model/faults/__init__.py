"""Every fault kchaos has, one module per kind of fault, found by its name: `clock` in `clock.py`,
`power-loss` in `process.py` beside the other faults that hit a node's processes.

Each module holds its faults' definitions (`DEFINITIONS`), the kinds it records, the values its options take
and the checks only it needs, and `ORDER`, where its faults come in listings. `kchaos.model.fault_table`
finds the modules here; nothing else lists them. The nemesis that carries a fault out is the module of the
same name in `kchaos.nemesis`.
"""
