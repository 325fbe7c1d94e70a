"""Imported by the forkserver of `medio.processes` only: loads every format library (`medio.preload`) once, in
the server's single thread, so that every worker forked from it starts with complete modules."""

from medio.libraries import preload

preload()
