"""The claude agent, offline: recorded Messages-API streams served by a mock HTTP transport, a
stand-in evaluator, a real engine, trace, git branch and repertoire."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kernelseek_tui.session.agents.claude import ClaudeAgent
from kernelseek_tui.session.agents.conversation import CLEARED
from kernelseek_tui.session.agents.prompt import QUESTION_PREFIX, system_prompt
from kernelseek_tui.session.config import Budgets
from kernelseek_tui.session.engine import Engine
from kernelseek_tui.session.meta import read_meta, write_meta
from kernelseek_tui.trace.pricing import estimate_cost
from tests.test_session_support import (
    SequenceEvaluator,
    make_task_repo,
    read_events,
    session_config,
)

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic" / "session20"
SCRIPT = json.loads((FIXTURES / "script.json").read_text())
MODEL = SCRIPT[0]["model"]
KEY = "sk-ant-test-key-7f3c9e1d5b2a"
# The evaluations of the script, in order (None: the candidate fails).
SPEEDS = [1.0, 1.3, 1.28, 1.29, 1.30, 1.28, 1.30, None, 1.6, 1.61]


def http_module() -> Any:
    """The HTTP library the installed SDK takes clients from (httpx, or its httpx2 fork)."""
    import anthropic._base_client as base

    return getattr(base, "httpx2", None) or base.httpx


class Server:
    """Serves the replies in order and keeps every request (its JSON body and headers)."""

    def __init__(self, replies: list[Any]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: Any) -> Any:
        http = http_module()
        self.requests.append(json.loads(request.content))
        self.headers.append(dict(request.headers))
        reply = self.replies[len(self.requests) - 1]
        if isinstance(reply, tuple):
            status, body, headers = reply
            return http.Response(status, json=body, headers=headers)
        return http.Response(
            200, headers={"content-type": "text/event-stream"}, content=reply.read_bytes()
        )

    def client(self) -> Any:
        http = http_module()
        return http.Client(transport=http.MockTransport(self))


def turn(n: int) -> Path:
    return FIXTURES / f"turn_{n:02d}.sse"


def script_replies(first: int = 1) -> list[Any]:
    """Turns ``first``..20, with the overloaded 200 stream before turn 12."""
    replies: list[Any] = []
    for n in range(first, 21):
        if n == 12:
            replies.append(FIXTURES / "overloaded.sse")
        replies.append(turn(n))
    return replies


def request_of_turn(n: int) -> int:
    return n - 1 if n <= 11 else n  # the failed attempt of turn 12 sits at index 11


def make_engine(tmp_path: Path, evaluator: Callable[..., Any], **changes: Any) -> Engine:
    task_dir = make_task_repo(tmp_path / "user")
    settings: dict[str, Any] = {
        "agent": "claude",
        "model": MODEL,
        "decisions": {"plateau_evals": 3},
    }
    settings.update(changes)
    return Engine.start(
        session_config(task_dir, tmp_path / "traces", **settings), evaluator=evaluator
    )


def make_agent(server: Server, waits: list[float], **options: Any) -> ClaudeAgent:
    return ClaudeAgent(
        model=MODEL,
        http_client=server.client(),
        sleep=waits.append,
        context_budget_tokens=40_000,
        seed=1,
        **options,
    )


def files_containing(root: Path, needle: bytes) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() and needle in p.read_bytes()]


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The scripted 20-turn session, run once for the tests that read it."""
    tmp_path = tmp_path_factory.mktemp("claude20")
    with pytest.MonkeyPatch.context() as monkeypatch:
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("GITHUB_TOKEN", "ghp_not_for_the_shell")
        server = Server(script_replies())
        evaluator = SequenceEvaluator(SPEEDS)
        engine = make_engine(tmp_path, evaluator)
        waits: list[float] = []
        outcome = engine.run(make_agent(server, waits))
    return {
        "engine": engine,
        "server": server,
        "evaluator": evaluator,
        "outcome": outcome,
        "events": read_events(engine.session_dir),
        "waits": waits,
        "tmp": tmp_path,
    }


def test_twenty_turns_make_twenty_recorded_model_calls(session: dict[str, Any]) -> None:
    events, server = session["events"], session["server"]
    assert session["outcome"].reason == "finish"
    assert len(server.requests) == 21  # 20 turns and one retried overloaded stream
    # The key from the environment is what the SDK sent (as x-api-key or a bearer token).
    sent = {
        h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ")
        for h in server.headers
    }
    assert sent == {KEY}
    replies = [e for e in events if e.kind == "message" and e.role == "assistant"]
    assert [e.response_id for e in replies] == [f"msg_{n:02d}" for n in range(1, 21)]
    assert [e.turn for e in replies] == list(range(1, 21))
    for event, scripted in zip(replies, SCRIPT, strict=True):
        usage = scripted["usage"]
        assert event.model == MODEL
        assert event.input_tokens == usage["input_tokens"]
        assert event.output_tokens == usage["output_tokens"]
        assert event.cache_creation_input_tokens == usage["cache_creation_input_tokens"]
        assert event.cache_read_input_tokens == usage["cache_read_input_tokens"]
        assert event.cost_usd == pytest.approx(estimate_cost(MODEL, **usage))
        assert event.cost_usd > 0
        assert event.stop_reason == "tool_use"
        content = json.loads(event.attrs)["content"]
        assert [b["type"] for b in content] == [b["type"] for b in scripted["blocks"]]
    meta = read_meta(session["engine"].session_dir)
    assert meta.stats["cost_usd"] == pytest.approx(sum(e.cost_usd for e in replies), abs=1e-5)
    assert meta.stats["model_calls"] == 20


def test_the_trace_rows_come_in_the_order_things_happened(session: dict[str, Any]) -> None:
    events = session["events"]
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.event_id for e in events}) == len(events)
    head = [(e.kind, e.role, e.tool_name) for e in events[:15]]
    assert head == [
        ("control", "harness", None),
        ("message", "user", None),
        ("thinking", "assistant", None),
        ("message", "assistant", None),
        ("tool_call", "assistant", "list_files"),
        ("tool_result", "user", "list_files"),
        ("message", "assistant", None),
        ("tool_call", "assistant", "read_file"),
        ("tool_result", "user", "read_file"),
        ("message", "assistant", None),
        ("tool_call", "assistant", "evaluate"),
        ("eval", "harness", None),
        ("commit", "harness", None),
        ("tool_result", "user", "evaluate"),
        ("message", "assistant", None),
    ]
    calls = [e for e in events if e.kind == "tool_call"]
    results = [e for e in events if e.kind == "tool_result"]
    assert [c.tool_call_id for c in calls] == [f"toolu_{n:02d}" for n in range(1, 22)]
    assert sorted(r.tool_call_id for r in results) == sorted(c.tool_call_id for c in calls)
    by_id = {e.event_id: e for e in events}
    for call in calls:
        assert by_id[call.parent_event_id].kind == "message"  # the response that asked for it
    assert events[-1].kind == "control" and json.loads(events[-1].attrs)["reason"] == "finish"


def test_an_overloaded_stream_is_retried_without_running_a_tool_again(
    session: dict[str, Any],
) -> None:
    events, server, evaluator = session["events"], session["server"], session["evaluator"]
    errors = [e for e in events if e.kind == "error"]
    assert len(errors) == 1
    attrs = json.loads(errors[0].attrs)
    assert attrs["error_type"] == "overloaded_error" and attrs["attempt"] == 1
    assert len(session["waits"]) == 1 and 0 < session["waits"][0] <= 2.0
    # The retry sends exactly the failed request again: no tool ran in between.
    assert server.requests[11] == server.requests[12]
    position = events.index(errors[0])
    assert events[position + 1].kind == "thinking"  # turn 12's reply, nothing else first
    assert len(evaluator.calls) == 10
    assert sum(1 for e in events if e.kind == "tool_call" and e.tool_name == "evaluate") == 10


def test_thinking_blocks_and_signatures_go_back_unchanged(session: dict[str, Any]) -> None:
    server = session["server"]
    sent = server.requests[request_of_turn(2)]["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"][0] == SCRIPT[0]["blocks"][0]  # thinking text and signature
    redacted = server.requests[request_of_turn(13)]["messages"][-2]["content"][0]
    assert redacted == {"type": "redacted_thinking", "data": "cmVkYWN0ZWQtdGhpbmtpbmc="}
    first = server.requests[0]
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 16_000}
    assert first["max_tokens"] == 32_000 and first["model"] == MODEL


def test_the_stable_prefix_is_marked_for_the_prompt_cache(session: dict[str, Any]) -> None:
    for body in session["server"].requests:
        assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
        assert body["tools"][-1]["cache_control"] == {"type": "ephemeral"}
        assert all("cache_control" not in t for t in body["tools"][:-1])
        assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    # The prefix is the same on every call, so the cache can serve it.
    systems = {json.dumps(b["system"]) + json.dumps(b["tools"]) for b in session["server"].requests}
    assert len(systems) == 1


def test_plateau_limit_claim_and_finish_raise_questions_put_to_the_model(
    session: dict[str, Any],
) -> None:
    events, server = session["events"], session["server"]
    questions = [e for e in events if e.kind == "question"]
    assert [(q.trigger, q.source) for q in questions] == [
        ("plateau", "repertoire"),
        ("limit_claim", "repertoire"),
        (None, "agent"),
        ("finish_request", "repertoire"),
    ]
    decisions = [e for e in events if e.kind == "decision"]
    assert [d.trigger for d in decisions] == ["plateau", "limit_claim", "finish_request"]
    assert "hardware limit" in decisions[1].text

    def user_texts(n: int) -> list[str]:
        last = server.requests[request_of_turn(n)]["messages"][-1]
        return [b["text"] for b in last["content"] if b["type"] == "text"]

    plateau, limit, drawn, finish = (q.question_text for q in questions)
    # After turn 10's evaluation: the tool result, then the question.
    last = server.requests[request_of_turn(11)]["messages"][-1]["content"]
    assert [b["type"] for b in last] == ["tool_result", "text"]
    assert user_texts(11) == [QUESTION_PREFIX + plateau]
    assert user_texts(12) == [QUESTION_PREFIX + limit]
    assert user_texts(17) == []  # the drawn question came back as the tool's result
    result = server.requests[request_of_turn(17)]["messages"][-1]["content"][0]
    assert result["content"] == drawn
    # The first finish is answered with a question, the second ends the session.
    finish_results = [e for e in events if e.kind == "tool_result" and e.tool_name == "finish"]
    assert finish_results[0].text.startswith("Not finished")
    assert user_texts(19) == [QUESTION_PREFIX + finish]
    assert finish_results[1].text == "Finishing the session."


def test_verified_candidates_are_commits_with_the_last_question(session: dict[str, Any]) -> None:
    engine, events = session["engine"], session["events"]
    questions = [e.question_text for e in events if e.kind == "question"]
    candidates = list(reversed(engine.history.candidates()))
    # The script evaluates the starting kernel, then three edits, and some of them again
    # unchanged: each edit that passed is a candidate, every other verified evaluation is
    # attached to the commit holding its code (the start commit for the starting kernel).
    assert [(c.speedup, c.new_best) for c in candidates] == [
        (1.3, True),
        (1.29, False),
        (1.6, True),
    ]
    assert [c.question for c in candidates] == [None, None, questions[1]]
    commits = [e for e in events if e.kind == "commit"]
    holders = [engine.history.base_sha, *(candidates[i].sha for i in (0, 1, 1, 1, 1, 2, 2))]
    assert [e.git_sha for e in commits] == holders
    assert [json.loads(e.attrs)["attached"] for e in commits] == [
        True, False, False, True, True, True, False, True,
    ]  # fmt: skip
    evals = {e.seq: e for e in events if e.kind == "eval"}
    made = [c for c in commits if not json.loads(c.attrs)["attached"]]
    for commit, candidate in zip(made, candidates, strict=True):
        assert candidate.seq == json.loads(commit.attrs)["eval_seq"]
        assert evals[candidate.seq].verdict == "pass"
    assert engine.history.find_commit_for_seq(json.loads(commits[-1].attrs)["eval_seq"]) == (
        candidates[-1].sha
    )
    failed = [e for e in evals.values() if e.verdict == "fail"]
    assert len(failed) == 1 and "failures (first 2 of 2)" in failed[0].text
    kernel = subprocess.run(
        ["git", "show", f"{candidates[-1].sha}:kernels/flash_fwd/baseline.cu"],
        cwd=engine.history.repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "constexpr int kThreads = 256;  // step 4" in kernel


def test_old_tool_results_are_cleared_when_the_prompt_grows(session: dict[str, Any]) -> None:
    events, server = session["events"], session["server"]
    compactions = [e for e in events if e.kind == "compaction"]
    assert len(compactions) == 1
    cleared = json.loads(compactions[0].attrs)["cleared"]
    assert cleared[0] == "toolu_01" and "toolu_15" not in cleared
    replies = [e for e in events if e.kind == "message" and e.role == "assistant"]
    assert replies[14].seq < compactions[0].seq < replies[15].seq  # after turn 15's big prompt
    sent = server.requests[request_of_turn(16)]["messages"]
    results = {
        b["tool_use_id"]: b["content"]
        for m in sent
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "tool_result"
    }
    assert results["toolu_01"] == CLEARED
    assert results["toolu_16"] != CLEARED  # the newest results stay
    before = server.requests[request_of_turn(15)]["messages"]
    assert any(b.get("content") != CLEARED for b in before[2]["content"])


def test_the_shell_gets_no_keys_and_the_key_is_written_nowhere(session: dict[str, Any]) -> None:
    engine, events = session["engine"], session["events"]
    shell = next(e for e in events if e.kind == "tool_result" and e.tool_name == "run_shell")
    assert shell.text.splitlines()[:2] == ["0", "shell-ok"]
    needle = KEY.encode()
    assert files_containing(engine.session_dir, needle) == []
    assert files_containing(engine.history.worktree, needle) == []
    assert files_containing(engine.history.repo, needle) == []
    history = subprocess.run(
        ["git", "log", "-p", "--all", "--notes=kernelseek"],
        cwd=engine.history.repo,
        capture_output=True,
        check=True,
    ).stdout
    assert needle not in history and b"candidate 3" in history


def test_the_system_prompt_names_no_technique(session: dict[str, Any]) -> None:
    prompt = session["server"].requests[0]["system"][0]["text"].lower()
    assert "baseline.cu" in prompt and "evaluate" in prompt and "finish" in prompt
    for word in (
        "tile", "tiling", "shared memory", "tensor core", "wgmma", "mma", "tma", "softmax",
        "online", "pipelin", "warp", "async", "flash", "attention", "split", "swizzle",
        "register", "vectori", "coalesc", "occupancy", "unroll", "fus", "bank", "prefetch",
        "double buffer", "ldmatrix", "block_m", "block_n",
    ):  # fmt: skip
        assert not re.search(rf"\b{word}", prompt), word
    ctx = session["engine"]
    assert system_prompt(ctx, shell_timeout_s=300, shell_output_chars=30_000).lower() == prompt


def test_a_529_status_and_a_429_are_retried_with_backoff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    server = Server([(529, overloaded, {}), (429, limited, {"retry-after": "7"}), turn(20)])
    engine = make_engine(tmp_path, SequenceEvaluator([1.0]), decisions={"finish_questions": 0})
    waits: list[float] = []
    outcome = engine.run(make_agent(server, waits))
    assert outcome.reason == "finish" and len(server.requests) == 3
    assert len(waits) == 2 and 0 < waits[0] <= 2.0 and waits[1] == 7.0
    errors = [json.loads(e.attrs) for e in read_events(engine.session_dir) if e.kind == "error"]
    assert [(e["status"], e["error_type"]) for e in errors] == [
        (529, "overloaded_error"),
        (429, "rate_limit_error"),
    ]


def test_a_request_the_api_refuses_ends_the_session_with_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    bad = {"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}
    server = Server([(400, bad, {})])
    engine = make_engine(tmp_path, SequenceEvaluator([1.0]))
    outcome = engine.run(make_agent(server, []))
    assert outcome.reason == "error" and len(server.requests) == 1
    errors = [e for e in read_events(engine.session_dir) if e.kind == "error"]
    assert "failed for good" in errors[0].text
    assert read_meta(engine.session_dir).end_reason == "error"


def test_the_usd_budget_stops_before_the_next_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    server = Server(script_replies())
    evaluator = SequenceEvaluator(SPEEDS)
    engine = make_engine(tmp_path, evaluator, budgets=Budgets(usd=0.02))
    outcome = engine.run(make_agent(server, []))
    assert outcome.reason == "budget_usd" and len(server.requests) == 3
    assert evaluator.calls == []  # turn 3 asked for an evaluation; the money had run out
    events = read_events(engine.session_dir)
    skipped = [e for e in events if e.kind == "tool_call" and json.loads(e.attrs or "{}")]
    assert [e.tool_call_id for e in skipped] == ["toolu_03"]
    result = next(e for e in events if e.kind == "tool_result" and e.tool_call_id == "toolu_03")
    assert result.is_error and "budget_usd" in result.text


def test_without_a_key_the_agent_refuses_to_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    engine = make_engine(tmp_path, SequenceEvaluator([1.0]))
    outcome = engine.run(ClaudeAgent(model=MODEL))
    assert outcome.reason == "error" and "ANTHROPIC_API_KEY" in outcome.detail


def without_cache_marks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            **m,
            "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]],
        }
        for m in messages
    ]


class Crash(BaseException):
    """Stands in for the process dying: nothing in the engine catches it."""


def test_a_crash_mid_tool_resumes_from_the_trace_without_running_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    ran: list[int] = []

    def dies_on_the_second(source: Path, sets: Any, *, knobs: Any = None) -> Any:
        ran.append(1)
        if len(ran) == 2:
            raise Crash  # turn 5's evaluation: its tool_call is in the trace, no result
        return SequenceEvaluator([1.0])(source, sets)

    first = Server(script_replies())
    engine = make_engine(tmp_path, dies_on_the_second)
    with pytest.raises(Crash):
        engine.run(make_agent(first, []))
    engine.writer.close(compact=False)
    assert len(first.requests) == 5
    meta = read_meta(engine.session_dir)
    assert meta.status == "running"
    meta.pid = 2**22 + 4321  # the process that ran it is gone
    write_meta(engine.session_dir, meta)

    second = Server(script_replies(first=6))
    evaluator = SequenceEvaluator(SPEEDS[2:])
    resumed = Engine.resume(engine.session_dir, evaluator=evaluator)
    outcome = resumed.run(make_agent(second, []))
    assert outcome.reason == "finish"
    # The conversation went on where it stopped: the first request after the restart holds
    # turns 1-5 as they were, with turn 5's evaluation answered as interrupted.
    messages = second.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"] * 5 + ["user"]
    assert messages[1]["content"][0] == SCRIPT[0]["blocks"][0]
    assert messages[-1]["content"][0]["tool_use_id"] == "toolu_05"
    assert messages[-1]["content"][0]["is_error"] is True
    assert "harness restarted" in messages[-1]["content"][0]["content"]
    assert without_cache_marks(messages[:9]) == without_cache_marks(first.requests[4]["messages"])
    events = read_events(engine.session_dir)
    assert [e.seq for e in events] == list(range(len(events)))
    assert len({e.event_id for e in events}) == len(events)
    calls = [e.tool_call_id for e in events if e.kind == "tool_call"]
    assert len(calls) == len(set(calls)) == 21
    results = [e.tool_call_id for e in events if e.kind == "tool_result"]
    assert sorted(results) == sorted(calls)
    assert len(ran) == 2 and len(evaluator.calls) == 8  # turn 5's evaluation never ran again
    actions = [json.loads(e.attrs).get("action") for e in events if e.kind == "control"]
    assert actions[:3] == ["start", "resume", "reconcile"] and actions[-1] == "end"


DOWN = "down"  # in a Network plan: this call finds no network (the host does not resolve)


class Network:
    """A transport that plays ``plan`` call by call: ``DOWN``, or a reply as Server takes."""

    def __init__(self, plan: list[Any]) -> None:
        self.plan = list(plan)
        self.calls = 0
        self.server = Server([reply for reply in plan if reply != DOWN])

    def __call__(self, request: Any) -> Any:
        import socket

        step = self.plan[min(self.calls, len(self.plan) - 1)]
        self.calls += 1
        if step == DOWN:
            try:
                raise socket.gaierror(-3, "Temporary failure in name resolution")
            except socket.gaierror as dns:
                raise http_module().ConnectError(str(dns), request=request) from dns
        return self.server(request)

    def client(self) -> Any:
        http = http_module()
        return http.Client(transport=http.MockTransport(self))


def test_no_network_at_the_first_call_fails_at_once_naming_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A bogus key and no network used to retry for minutes, then say only "Traceback".
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-bogus")
    network = Network([DOWN])
    engine = make_engine(tmp_path, SequenceEvaluator([1.0]))
    waits: list[float] = []
    agent = ClaudeAgent(model=MODEL, http_client=network.client(), sleep=waits.append)
    outcome = engine.run(agent)
    assert network.calls == 1 and waits == []  # no retry, no wait
    assert outcome.reason == "error"
    assert "\n" not in outcome.detail
    assert outcome.detail.startswith("cannot reach the Anthropic API: gaierror: ")
    assert "Temporary failure in name resolution" in outcome.detail
    errors = [e for e in read_events(engine.session_dir) if e.kind == "error"]
    assert errors and all("Traceback" not in (e.text or "") for e in errors)
    assert all("\n" not in (e.text or "") for e in errors)


def test_a_connection_lost_after_the_api_has_answered_is_retried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    network = Network([turn(1), DOWN, turn(2), turn(20)])
    engine = make_engine(tmp_path, SequenceEvaluator([1.0]), decisions={"finish_questions": 0})
    waits: list[float] = []
    agent = ClaudeAgent(model=MODEL, http_client=network.client(), sleep=waits.append, seed=1)
    outcome = engine.run(agent)
    assert network.calls == 4 and len(waits) == 1  # the blip was waited out once
    assert outcome.reason == "finish"
