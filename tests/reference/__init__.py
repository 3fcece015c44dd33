"""The pandas reference engines: every anomaly defined again, plainly, as the test oracle the Spark checkers
are held to (and the engine `bench` measures them against). Test code, not shipped in the wheel: a user's
check never runs them."""
