"""The ``claude`` agent: the Anthropic Messages API, streamed, with tools.

Each turn sends the conversation (system prompt and tools marked for the prompt cache, plus a
moving cache breakpoint on the newest user turn), reads the streamed response, records it
(thinking, text, tokens, cost), and runs the tools it asks for through the engine, one at a
time. The questions the engine queues go to the model after the tool results of the turn.

A resumed session rebuilds the conversation from the trace (``Conversation.rebuild``); tool
uses of the last turn that never reached the trace are run then, the others are not run again.
The API key comes only from ``ANTHROPIC_API_KEY`` and is never written anywhere.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from typing import Any

from kernelseek_tui.errors import KernelseekError, one_line
from kernelseek_tui.session.agents.base import AgentContext, SessionStop
from kernelseek_tui.session.agents.claude_api import (
    RetryPolicy,
    block_to_param,
    classify,
    stream_message,
    thinking_config,
    usage_dict,
)
from kernelseek_tui.session.agents.conversation import Conversation, estimate_tokens
from kernelseek_tui.session.agents.prompt import (
    first_message,
    question_message,
    system_prompt,
    tool_params,
)
from kernelseek_tui.session.tools import DEFAULT_SHELL_OUTPUT_CHARS, DEFAULT_SHELL_TIMEOUT_S

DEFAULT_MODEL = "claude-sonnet-4-5"
API_KEY_ENV = "ANTHROPIC_API_KEY"
CUT_OFF = "the reply was cut off at the output token limit before this call was complete"


class ClaudeAgent:
    """The Anthropic agent (see the module docstring).

    ``client`` (an ``anthropic.Anthropic``) or ``http_client`` (handed to the one built here)
    replace the defaults in tests; ``sleep`` is what retries wait with.
    """

    name: str = "claude"
    raises_decisions: bool = True

    def __init__(
        self,
        model: str | None = None,
        *,
        client: Any = None,
        http_client: Any = None,
        max_tokens: int = 32_000,
        thinking: bool | None = None,
        thinking_budget: int = 16_000,
        context_budget_tokens: int = 150_000,
        keep_recent_results: int = 6,
        retry: RetryPolicy | None = None,
        shell_timeout_s: float = DEFAULT_SHELL_TIMEOUT_S,
        shell_output_chars: int = DEFAULT_SHELL_OUTPUT_CHARS,
        sleep: Callable[[float], None] = time.sleep,
        seed: int | None = None,
    ) -> None:
        self.model = model or DEFAULT_MODEL
        self._client = client
        self._http_client = http_client
        self.max_tokens = max_tokens
        self.thinking = None
        if thinking is not False:
            self.thinking = thinking_config(self.model, thinking_budget)
            if self.thinking and self.thinking.get("budget_tokens", 0) >= max_tokens:
                raise KernelseekError("--thinking-budget must be below --max-tokens")
        self.context_budget_tokens = context_budget_tokens
        self.keep_recent_results = keep_recent_results
        self.retry = retry or RetryPolicy()
        self.shell_timeout_s = shell_timeout_s
        self.shell_output_chars = shell_output_chars
        self._sleep = sleep
        self._rng = random.Random(seed)
        self._last_prompt_tokens = 0
        self._answered = False  # has the API answered once in this run?

    # -- the client -----------------------------------------------------------------------

    def client(self) -> Any:
        if self._client is None:
            key = os.environ.get(API_KEY_ENV)
            if not key:
                raise KernelseekError(f"the claude agent needs ${API_KEY_ENV}")
            import anthropic

            # Retries are ours (counted, recorded, never re-running a tool): the SDK makes one.
            self._client = anthropic.Anthropic(
                api_key=key, http_client=self._http_client, max_retries=0
            )
        return self._client

    # -- the loop -------------------------------------------------------------------------

    def run(self, ctx: AgentContext) -> None:
        self.client()  # a missing key fails now, before anything is recorded as a turn
        system = system_prompt(
            ctx, shell_timeout_s=self.shell_timeout_s, shell_output_chars=self.shell_output_chars
        )
        tools = tool_params(ctx.offered_tools)
        conversation = Conversation.rebuild(ctx.past_events)
        turn = max((e.turn or 0 for e in ctx.past_events), default=0)
        if conversation.empty:
            text = first_message(ctx)
            ctx.record("message", flush=True, role="user", source="harness", text=text)
            conversation.add_user_text(text)
        else:
            self._last_prompt_tokens = estimate_tokens(conversation.messages)
        while True:
            tail = conversation.tail_assistant()
            if tail is not None:
                self._answer_tail(ctx, conversation, tail, turn)
            self._gather_questions(ctx, conversation)
            ctx.checkpoint()
            self._gather_questions(ctx, conversation)
            if not conversation.has_pending_user():
                # Only reachable when a finish was declined without a question to put.
                conversation.add_user_text("Go on.")
            self._compact(ctx, conversation, turn + 1)
            turn += 1
            message, attempts, duration_ms = self._call(ctx, conversation, system, tools, turn)
            content = [block_to_param(block) for block in message.content]
            for block in content:
                if block.get("type") in ("thinking", "redacted_thinking"):
                    ctx.record(
                        "thinking",
                        role="assistant",
                        source="agent",
                        turn=turn,
                        text=block.get("thinking"),
                        attrs={"redacted": block["type"] == "redacted_thinking"},
                    )
            text = "\n".join(b["text"] for b in content if b.get("type") == "text")
            usage = usage_dict(message.usage)
            event = ctx.record_model_call(
                model=getattr(message, "model", None) or self.model,
                response_id=getattr(message, "id", None),
                stop_reason=getattr(message, "stop_reason", None),
                usage=usage,
                text=text,
                content=content,
                turn=turn,
                duration_ms=duration_ms,
                attrs={"attempts": attempts, "request_model": self.model},
            )
            self._last_prompt_tokens = sum(v or 0 for v in usage.values())
            conversation.add_assistant(content, message.stop_reason, event.event_id)
            if text:
                ctx.observe_text(text)

    def _gather_questions(self, ctx: AgentContext, conversation: Conversation) -> None:
        for question in ctx.take_questions():
            conversation.add_user_text(question_message(question))

    def _answer_tail(
        self, ctx: AgentContext, conversation: Conversation, tail: dict[str, Any], turn: int
    ) -> None:
        """Run the tools the last turn asked for, or take a turn without tools as a wish to
        finish. Tool uses already in the trace are not run again."""
        uses = [b for b in tail["content"] if b.get("type") == "tool_use"]
        if not uses:
            text = " ".join(b.get("text", "") for b in tail["content"] if b.get("type") == "text")
            if ctx.request_finish(text.strip()[:500] or "the agent ended its turn"):
                ctx.checkpoint()  # raises SessionStop("finish")
            return
        pending = [
            b
            for b in uses
            if b["id"] not in conversation.answered and b["id"] not in conversation.recorded_calls
        ]
        last_block = tail["content"][-1]
        for index, block in enumerate(pending):
            common = {
                "call_id": block["id"],
                "turn": turn,
                "parent_event_id": conversation.tail_event_id,
            }
            tool_input = block.get("input") if isinstance(block.get("input"), dict) else {}
            if conversation.tail_stop_reason == "max_tokens" and block is last_block:
                outcome = ctx.skip_tool(block["name"], tool_input, reason=CUT_OFF, **common)
            else:
                try:
                    outcome = ctx.call_tool(block["name"], tool_input, **common)
                except SessionStop as stop:
                    for rest in pending[index:]:
                        rest_input = (
                            rest.get("input") if isinstance(rest.get("input"), dict) else {}
                        )
                        ctx.skip_tool(
                            rest["name"],
                            rest_input,
                            call_id=rest["id"],
                            reason=f"the session is ending ({stop.reason})",
                            turn=turn,
                            parent_event_id=conversation.tail_event_id,
                        )
                    raise
            conversation.recorded_calls.add(block["id"])
            conversation.add_tool_result(block["id"], outcome.text, outcome.is_error)

    # -- calling the model ----------------------------------------------------------------

    def _compact(
        self, ctx: AgentContext, conversation: Conversation, turn: int, force: bool = False
    ) -> None:
        pending = estimate_tokens([*conversation.results, *conversation.texts])
        prompt = self._last_prompt_tokens + pending
        if force:
            prompt = max(prompt, self.context_budget_tokens + 1)
        cleared = conversation.compact(prompt, self.context_budget_tokens, self.keep_recent_results)
        if cleared:
            ctx.record(
                "compaction",
                flush=True,
                role="harness",
                source="harness",
                turn=turn,
                text=f"cleared {len(cleared)} old tool results to stay inside the context window",
                attrs={
                    "strategy": "clear_tool_results",
                    "cleared": cleared,
                    "prompt_tokens": prompt,
                    "budget_tokens": self.context_budget_tokens,
                },
            )
            self._last_prompt_tokens = estimate_tokens(conversation.messages)

    def _request(
        self, conversation: Conversation, system: str, tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
            "tools": tools,
            "messages": conversation.request_messages(),
        }
        if self.thinking is not None:
            request["thinking"] = self.thinking
        return request

    def _call(
        self,
        ctx: AgentContext,
        conversation: Conversation,
        system: str,
        tools: list[dict[str, Any]],
        turn: int,
    ) -> tuple[Any, int, float]:
        """One model response, retried as ``claude_api`` says; never runs a tool."""
        attempt = 0
        compacted = False
        while True:
            attempt += 1
            started = time.monotonic()
            try:
                message = stream_message(self.client(), self._request(conversation, system, tools))
                self._answered = True
                return message, attempt, (time.monotonic() - started) * 1000
            except Exception as error:
                failure = classify(error)
                attrs = {
                    "attempt": attempt,
                    "status": failure.status,
                    "error_type": failure.error_type,
                    "where": "model_call",
                }
                if failure.too_long and not compacted:
                    compacted = True
                    ctx.record("error", flush=True, turn=turn, text=failure.message, attrs=attrs)
                    self._compact(ctx, conversation, turn, force=True)
                    continue
                if failure.connect and not self._answered:
                    reason = f"cannot reach the Anthropic API: {one_line(error)}"
                    final = f"{reason} (not retried: no call has got through in this run)"
                    _record_call_error(ctx, turn, final, {**attrs, "final": True})
                    raise KernelseekError(
                        f"{reason}; check the network, a proxy (HTTPS_PROXY) or ANTHROPIC_BASE_URL"
                    ) from None
                if not failure.retryable or attempt >= self.retry.attempts:
                    gave_up = f"model call failed for good: {failure.message}"
                    _record_call_error(ctx, turn, gave_up, {**attrs, "final": True})
                    raise
                wait = self.retry.wait(attempt, failure.retry_after, self._rng)
                retrying = f"model call failed ({failure.message}); retrying in {wait:.1f} s"
                _record_call_error(ctx, turn, retrying, {**attrs, "wait_s": round(wait, 3)})
                self._sleep(wait)
                ctx.checkpoint()


def _record_call_error(ctx: AgentContext, turn: int, text: str, attrs: dict[str, Any]) -> None:
    """The ``error`` event of a failed model call (retried, or ``final``)."""
    ctx.record("error", flush=True, role="harness", source="harness", turn=turn, text=text,
               attrs=attrs)  # fmt: skip
