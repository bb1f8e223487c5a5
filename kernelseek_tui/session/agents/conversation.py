"""The conversation with the model: built live, rebuilt from the trace, kept inside the window.

Messages follow the Messages API: user and assistant turns alternate; an assistant turn that
used tools is answered by a user turn that starts with one ``tool_result`` per ``tool_use``,
followed by any text the harness adds (the questions). Assistant content is kept exactly as the
API returned it, thinking blocks and their signatures included, because the API wants them
back unchanged.

Rebuilding from the trace reads the same events the engine wrote: the first user message, each
assistant message's content (kept whole in its ``message`` event), every ``tool_result`` and
every question put to the agent, and the ``compaction`` events (which tool results were
cleared). The result is the conversation the agent had when it stopped.

To stay inside the context window, ``compact`` replaces the contents of the oldest tool results
with a short placeholder once the last prompt grew past a budget (the most recent ones stay).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from kernelseek_tui.session.agents.prompt import question_message
from kernelseek_tui.trace.schema import Event

CLEARED = (
    "[an older tool result, cleared to keep the conversation inside the context window; "
    "call the tool again if you need it]"
)
CHARS_PER_TOKEN = 4


def estimate_tokens(value: Any) -> int:
    """A rough token count of a JSON-able value (about four characters per token)."""
    return len(json.dumps(value, ensure_ascii=False)) // CHARS_PER_TOKEN + 1


@dataclass(slots=True)
class Conversation:
    """Messages so far plus the user turn being gathered (see the module docstring)."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    tail_stop_reason: str | None = None
    tail_event_id: str | None = None
    recorded_calls: set[str] = field(default_factory=set)  # tool_use ids with a tool_call event
    answered: set[str] = field(default_factory=set)  # tool_use ids with a result
    cleared: set[str] = field(default_factory=set)

    # -- building -------------------------------------------------------------------------

    def add_user_text(self, text: str) -> None:
        if text:
            self.texts.append(text)

    def add_tool_result(self, call_id: str, text: str | None, is_error: bool) -> None:
        """A result for a tool_use of the last assistant turn (others are dropped)."""
        if call_id not in self.open_tool_uses() or call_id in self.answered:
            return
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": call_id,
            "content": CLEARED if call_id in self.cleared else (text or "(no output)"),
        }
        if is_error:
            block["is_error"] = True
        self.results.append(block)
        self.answered.add(call_id)

    def add_assistant(
        self, content: list[dict[str, Any]], stop_reason: str | None, event_id: str | None
    ) -> None:
        self.close_user_turn()
        self.messages.append({"role": "assistant", "content": content})
        self.tail_stop_reason = stop_reason
        self.tail_event_id = event_id

    def close_user_turn(self) -> None:
        """Turn the gathered tool results and texts into one user message."""
        if not self.results and not self.texts:
            return
        content = [*self.results, *({"type": "text", "text": t} for t in self.texts)]
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"].extend(content)
        else:
            self.messages.append({"role": "user", "content": content})
        self.results, self.texts = [], []

    # -- reading --------------------------------------------------------------------------

    @property
    def empty(self) -> bool:
        return not self.messages and not self.results and not self.texts

    def has_pending_user(self) -> bool:
        return bool(self.results or self.texts)

    def tail_assistant(self) -> dict[str, Any] | None:
        """The last assistant turn, when nothing has been added after it yet."""
        if self.has_pending_user() or not self.messages:
            return None
        last = self.messages[-1]
        return last if last["role"] == "assistant" else None

    def open_tool_uses(self) -> list[str]:
        """The tool_use ids of the last assistant turn."""
        for message in reversed(self.messages):
            if message["role"] == "assistant":
                return [b["id"] for b in message["content"] if b.get("type") == "tool_use"]
        return []

    def request_messages(self) -> list[dict[str, Any]]:
        """The messages to send: the pending user turn closed, a cache breakpoint on the last
        block so the next call reads the whole conversation so far from the cache."""
        self.close_user_turn()
        messages = copy.deepcopy(self.messages)
        if messages and messages[-1]["role"] == "user" and messages[-1]["content"]:
            last = messages[-1]["content"][-1]
            last["cache_control"] = {"type": "ephemeral"}
        return messages

    # -- compaction -----------------------------------------------------------------------

    def compact(self, prompt_tokens: int, budget: int, keep_recent: int) -> list[str]:
        """Clear the oldest tool results while the prompt is over ``budget`` tokens, down to
        half of it; the ``keep_recent`` newest results stay. Returns the cleared ids."""
        if prompt_tokens <= budget:
            return []
        self.close_user_turn()
        blocks = [
            block
            for message in self.messages
            if message["role"] == "user"
            for block in message["content"]
            if block.get("type") == "tool_result" and block["content"] != CLEARED
        ]
        candidates = blocks[: max(0, len(blocks) - keep_recent)]
        target = budget // 2
        cleared: list[str] = []
        for block in candidates:
            if prompt_tokens <= target:
                break
            prompt_tokens -= max(0, estimate_tokens(block["content"]) - estimate_tokens(CLEARED))
            block["content"] = CLEARED
            self.cleared.add(block["tool_use_id"])
            cleared.append(block["tool_use_id"])
        return cleared

    def apply_cleared(self, ids: list[str]) -> None:
        """Clear the named tool results (a ``compaction`` event read back from the trace)."""
        wanted = set(ids)
        self.cleared |= wanted
        for message in self.messages:
            if message["role"] != "user":
                continue
            for block in message["content"]:
                if block.get("type") == "tool_result" and block["tool_use_id"] in wanted:
                    block["content"] = CLEARED
        for block in self.results:
            if block["tool_use_id"] in wanted:
                block["content"] = CLEARED

    # -- from the trace -------------------------------------------------------------------

    @classmethod
    def rebuild(cls, events: list[Event]) -> Conversation:
        """The conversation the recorded events describe (see the module docstring)."""
        conversation = cls()
        for event in events:
            kind = event.kind
            if kind == "message" and event.role == "user" and event.text:
                conversation.add_user_text(event.text)
            elif kind == "message" and event.role == "assistant":
                content = event.attrs_dict().get("content")
                if isinstance(content, list) and content:
                    conversation.add_assistant(content, event.stop_reason, event.event_id)
            elif kind == "tool_call" and event.tool_call_id:
                conversation.recorded_calls.add(event.tool_call_id)
            elif kind == "tool_result" and event.tool_call_id:
                conversation.add_tool_result(event.tool_call_id, event.text, bool(event.is_error))
            elif kind == "question" and event.question_text:
                if event.attrs_dict().get("delivered_in") != "tool_result":
                    conversation.add_user_text(question_message(event.question_text))
            elif kind == "compaction":
                ids = event.attrs_dict().get("cleared")
                if isinstance(ids, list):
                    conversation.apply_cleared([str(i) for i in ids])
        return conversation
