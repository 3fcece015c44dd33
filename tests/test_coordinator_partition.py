"""Where brokers place a group or transactional id: Java's `String.hashCode`, then `Utils.abs` modulo the
internal topic's partition count. The nemesis aims coordinator faults by it, so it must match Java's
arithmetic exactly, overflow and the one negative int with no positive opposite included."""

from __future__ import annotations

from kchaos.harness.metadata import coordinator_partition, java_string_hash


def test_java_string_hash_matches_java() -> None:
    # Values of `String.hashCode` as a JVM computes them.
    assert java_string_hash("") == 0
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("Hello, World!") == 1498789909
    assert java_string_hash("kchaos-t1-group") == -1745339449
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert java_string_hash("é€😀") == 16752006  # code points beyond the BMP count as two UTF-16 units


def test_the_partition_is_utils_abs_of_the_hash_modulo_the_count() -> None:
    assert coordinator_partition("hello", 50) == 99162322 % 50
    assert java_string_hash("negative?") == -1510311254
    assert coordinator_partition("negative?", 50) == 4  # abs; masking the sign bit off would give 44
    assert coordinator_partition("polygenelubricants", 50) == 0  # Utils.abs(Integer.MIN_VALUE) is 0
