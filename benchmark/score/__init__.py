"""The eleven MDS-Bench metrics: the `official` profile (reference scorer) and the corrected `strict` profile."""
