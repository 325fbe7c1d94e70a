"""The on-disk task format of MDS-Bench, the bundled synthetic suite, and the scorer (`benchmark.score`)."""
