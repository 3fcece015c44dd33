"""The Kafka image recipe (`base/` the Debian root filesystem, `kafka/` the broker image) as package data, so
`kchaos.harness.image` finds it through `importlib.resources` in a clone and in an installed kchaos alike.
Only the files `kchaos.harness.image` lists go into the image's `kchaos.recipe` digest; this one is not among
them."""
