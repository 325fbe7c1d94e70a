"""Validator checks, each a small named, weighted unit registered in the check registry."""
