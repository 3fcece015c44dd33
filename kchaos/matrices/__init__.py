"""The example and nightly matrix files as package data, so `kchaos matrix example` finds them through
`importlib.resources` in an installed kchaos, where no `kchaos/matrices/` folder is at hand."""
