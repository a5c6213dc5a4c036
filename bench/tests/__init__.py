"""Tests of the benchmark kit itself (run with `pytest bench/tests`)."""
