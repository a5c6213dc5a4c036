"""Benchmark kit: a PerfTest-like load generator and a side-by-side run of Leveret and RabbitMQ."""
