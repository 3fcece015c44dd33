"""kchaos runner: the top floor. It runs whole chaos runs (`run`), and is what users call: the `kchaos`
command (`cli`, with a `*_command(s)` module per command, the failures they exit with in `failures`, and
the `run` flags made from the configuration in `config_options`), matrix runs (`matrix_run`), the pytest
plugin (`pytest_plugin`) and the spark-submit entry (`submit`). It is the one package that may import
every other; nothing imports it."""
