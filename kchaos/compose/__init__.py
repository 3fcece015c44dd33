"""The image recipes as package data (`base/` the Debian root filesystem, `kafka/` the broker image,
`client/` the Java client worker's image, `rdkafka/` the librdkafka worker's image and the worker modules
it holds, `proxy/` the request proxy a node's network sidecar runs), so `kchaos.harness.image` and
`kchaos.harness.client_image` find them through `importlib.resources` in a clone and in an installed
kchaos alike. Only the files those modules list go into an image's `kchaos.recipe` digest; this one is not
among them."""
