"""Queue types: classic FIFO queues and their consumers."""
