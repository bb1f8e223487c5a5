"""Where the engine's questions come from when no person answers: the repertoire, ranked by
how each question has fared in past traces (``TraceStore.question_stats``) when the trace store
and DuckDB are importable, with no record otherwise."""

from __future__ import annotations

import logging
import random
from pathlib import Path
from typing import Any

from kernelseek_tui.errors import KernelseekError

log = logging.getLogger("kernelseek_tui.session")

SUGGESTIONS = 3


class QuestionDesk:
    """The repertoire of one session, loaded on first use; rankings reproducible per session."""

    def __init__(
        self,
        *,
        repertoire_path: Path | None,
        traces_root: Path,
        session_id: str,
        seed: int | None = None,
    ) -> None:
        self.repertoire_path = repertoire_path
        self.traces_root = traces_root
        self.session_id = session_id
        self.seed = seed
        self.problems: list[str] = []  # what went wrong loading things, for the trace
        self._repertoire: Any = None
        self._loaded = False
        self._stats: dict[str, Any] | None = None

    def repertoire(self) -> Any:
        """The loaded ``Repertoire``, or None when there is none to load (see ``problems``)."""
        if not self._loaded:
            self._loaded = True
            from kernelseek_tui.repertoire import find_repertoire, load_repertoire

            try:
                path = self.repertoire_path or find_repertoire()
                self._repertoire = load_repertoire(path)
            except KernelseekError as error:
                self.problems.append(f"no repertoire: {error}")
                self._repertoire = None
        return self._repertoire

    def stats(self) -> dict[str, Any]:
        """Question id -> record in past traces; empty without the trace store or DuckDB."""
        if self._stats is None:
            self._stats = {}
            try:
                from kernelseek_tui.trace.store import TraceStore

                store = TraceStore(self.traces_root, live=False)
                try:
                    self._stats = dict(store.question_stats())
                finally:
                    store.close()
            except Exception as error:  # no duckdb, an empty root, a bad file: rank untried
                log.info("question stats unavailable: %s", error)
                self.problems.append(f"question stats unavailable: {type(error).__name__}")
        return self._stats

    def rank(self, trigger: str, recent_ids: list[str]) -> list[Any]:
        """The questions for ``trigger``, best first; never empty while the repertoire has any
        (when every question was asked recently, the recency rule is dropped)."""
        repertoire = self.repertoire()
        if repertoire is None or not len(repertoire):
            return []
        from kernelseek_tui.repertoire import rank_questions

        rng = random.Random(f"{self.seed}:{self.session_id}:{len(recent_ids)}:{trigger}")
        ranked = rank_questions(
            repertoire, trigger, stats=self.stats(), recent_ids=recent_ids, rng=rng
        )
        if not ranked:
            rng = random.Random(f"{self.seed}:{self.session_id}:{len(recent_ids)}:{trigger}")
            ranked = rank_questions(
                repertoire,
                trigger,
                stats=self.stats(),
                recent_ids=recent_ids,
                rng=rng,
                avoid_last=0,
            )
        return list(ranked)

    def lookup(self, question_id: str | None) -> Any:
        repertoire = self.repertoire()
        if repertoire is None or question_id is None:
            return None
        return repertoire.get(question_id)
