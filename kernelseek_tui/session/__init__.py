"""A session: an agent improving one task's kernel inside the harness.

- :mod:`.engine`: :class:`Engine` (start, resume, run), the tools' dispatch, evaluations,
  commits, decision moments, budgets and the control inbox.
- :mod:`.config`: :class:`SessionConfig` and :class:`Budgets`.
- :mod:`.tools`: the workspace file tools and the shell, confined and without secrets.
- :mod:`.inbox`: the control inbox and the ``attached`` heartbeat.
- :mod:`.meta`: ``session.json``, liveness, listing and finding sessions.
- :mod:`.resume`: repairing what a crash left.
- :mod:`.agents`: ``claude``, ``tuner``, ``replay``.

Importing this package imports no agent, no Anthropic SDK, no DuckDB and no Textual.
"""

from __future__ import annotations
