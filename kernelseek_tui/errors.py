"""Errors a user can act on: the CLI prints them as one line and exits nonzero."""

from __future__ import annotations


class KernelseekError(Exception):
    """A problem with the user's input or environment, stated so they can fix it."""

    exit_code = 2


class NotBuiltError(KernelseekError):
    """A subcommand the design names that has not been built yet."""
