"""The session engine: one agent, one task, one trace, one branch.

- :mod:`.engine`: :class:`Engine` (start, resume, run) and the tool calls, built on
  :mod:`.core` (shared state, the trace, the public ``record_*`` methods), :mod:`.control`
  (inbox, pause, checkpoints), :mod:`.asking` (decision moments, questions) and
  :mod:`.judging` (evaluations, commits; :mod:`.evaluation` says how one is told).
- :mod:`.batch`: several evaluations at once, one per GPU; :mod:`.resume`: repairing what a
  crash left. Both use only the engine's public face, :class:`.public.PublicEngine`.

Readers of a session (the app, ``ls``, ``bisect``) never import this package: what they read
is in ``session.meta``, ``session.inbox`` and ``session.eval_files``.
"""

from __future__ import annotations

from kernelseek_tui.session.engine.engine import Engine, SessionOutcome
from kernelseek_tui.session.evaluator import Evaluator

__all__ = ["Engine", "Evaluator", "SessionOutcome"]
