"""The agents a session can run: ``claude`` (the Anthropic API), ``tuner`` (an offline knob
search) and ``replay`` (a recorded session's edits and questions, judged again).

``make_agent(name, **options)`` builds one; importing this package imports none of them, so
the tuner path never loads the Anthropic SDK.
"""

from __future__ import annotations

from typing import Any

from kernelseek_tui.errors import KernelseekError
from kernelseek_tui.session.agents.base import Agent

AGENT_NAMES = ("claude", "tuner", "replay")


def make_agent(name: str, **options: Any) -> Agent:
    """The agent called ``name``, built with its options (unknown options are an error)."""
    if name == "claude":
        from kernelseek_tui.session.agents.claude import ClaudeAgent

        return ClaudeAgent(**options)
    if name == "tuner":
        from kernelseek_tui.session.agents.tuner import TunerAgent

        return TunerAgent(**options)
    if name == "replay":
        from kernelseek_tui.session.agents.replay import ReplayAgent

        return ReplayAgent(**options)
    if name == "external":
        raise KernelseekError(
            "this session's agent is outside the process: resume it with `kernelseek mcp "
            "--session ID` (or `kernelseek session start --session ID`)"
        )
    raise KernelseekError(f"unknown agent {name!r}; choose one of {', '.join(AGENT_NAMES)}")
