"""The one base class of "the user gave us something wrong" errors, below every layer.

The CLI policy (`core.cli_errors`) turns any `InputError` into one line and exit 2; the layers above subclass
it for their own input errors (`medio.MedioError`: a file that cannot be read) without the policy having to
import them.
"""

from __future__ import annotations

__all__ = ["InputError"]


class InputError(Exception):
    """Bad input from the user (a file, a folder, an option): an expected failure, never a bug."""
