"""A session: an agent improving one task's kernel inside the harness.

- :mod:`.engine`: the package of :class:`Engine` (start, resume, run, the tool calls, the
  evaluations and commits, decision moments, batches, the repairs of a resume).
- :mod:`.config`: :class:`SessionConfig` and :class:`Budgets`.
- :mod:`.tools`: the workspace file tools and the shell, confined and without secrets.
- :mod:`.inbox`: the control inbox and the ``attached`` heartbeat.
- :mod:`.meta`: ``session.json``, liveness, listing and finding sessions.
- :mod:`.eval_files`: the full evaluation results kept beside the trace (written by the
  engine, read by the app).
- :mod:`.agents`: ``claude``, ``tuner``, ``replay``.

Importing this package imports no agent, no Anthropic SDK, no DuckDB and no Textual.
"""

from __future__ import annotations
