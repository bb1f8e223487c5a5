"""The header line: which session, which agent, how far it got, what it cost."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static


def format_elapsed(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s"


def format_tokens(tokens: int) -> str:
    if tokens >= 1_000_000:
        return f"{tokens / 1e6:.1f}M"
    if tokens >= 1_000:
        return f"{tokens / 1e3:.1f}k"
    return str(tokens)


class SessionHeader(Static):
    """One or two lines; the second holds a note the recording carries (e.g. 'scripted')."""

    DEFAULT_CSS = """
    SessionHeader { height: auto; background: $panel; color: $text; padding: 0 1;
                    text-wrap: nowrap; text-overflow: ellipsis; }
    """

    def show(
        self,
        *,
        session_id: str,
        agent: str | None,
        model: str | None,
        status: str,
        elapsed_s: float,
        counts: dict[str, Any],
        note: str | None = None,
    ) -> None:
        best = counts.get("best_speedup")
        cost = counts.get("cost_usd")
        line = Text()
        line.append(session_id, style="bold")
        line.append(f"  [{status}]", style="bold yellow" if status in {"running", "paused"} else "")
        line.append("  best ")
        line.append(f"{best:.3f}x" if best else "-", style="bold green" if best else "")
        line.append(f"  calls {counts.get('tool_calls', 0)}")
        line.append(f"  evals {counts.get('evals', 0)}")
        line.append(f"  {format_elapsed(elapsed_s)}")
        line.append(f"  {agent or '?'}")
        if model:
            line.append(f" ({model})")
        tokens = int(counts.get("tokens") or 0)
        if tokens or cost:  # an offline agent has neither: say nothing rather than "0"
            line.append(f"  tok {format_tokens(tokens)}")
            line.append(f"  ${cost:.2f}" if cost else "  $?")
        line.no_wrap = True
        line.overflow = "ellipsis"
        if note:
            second = Text(note, style="italic", no_wrap=True, overflow="ellipsis")
            line = Text("\n").join([line, second])
        self.update(line)
