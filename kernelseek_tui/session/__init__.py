"""A session: an agent improving one task's kernel inside the harness.

- :mod:`.engine`: :class:`Engine` (start, resume, run) and the tool calls, built on
  :mod:`.core` (shared state, the trace), :mod:`.control` (inbox, pause, checkpoints),
  :mod:`.asking` (decision moments, questions) and :mod:`.judging` (evaluations, commits).
- :mod:`.config`: :class:`SessionConfig` and :class:`Budgets`.
- :mod:`.tools`: the workspace file tools and the shell, confined and without secrets.
- :mod:`.inbox`: the control inbox and the ``attached`` heartbeat.
- :mod:`.meta`: ``session.json``, liveness, listing and finding sessions.
- :mod:`.resume`: repairing what a crash left.
- :mod:`.agents`: ``claude``, ``tuner``, ``replay``.

Importing this package imports no agent, no Anthropic SDK, no DuckDB and no Textual.
"""

from __future__ import annotations
