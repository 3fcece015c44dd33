"""kchaos runner: the top floor. It runs whole chaos runs (`run`), and is what users call: the `kchaos`
command (`cli`), matrix runs (`matrix_run`), the pytest plugin (`pytest_plugin`) and the spark-submit entry
(`submit`). It is the one package that may import every other; nothing imports it."""
