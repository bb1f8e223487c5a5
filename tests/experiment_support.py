"""Helpers for the experiment and compare tests (no tests here): a stand-in evaluator whose
speed follows the scripted claude session's edits, and a local stand-in for the Messages API
that serves the recorded turns to any number of session processes at once."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from kernelseek_tui.evaluate.result import EvalResult
from kernelseek_tui.task import Task
from tests.test_session_support import make_result

FIXTURES = Path(__file__).parent / "fixtures" / "anthropic" / "session20"
# The scripted session's edits mark the kernel "// step N"; each step is this fast.
STEP_SPEED = {0: 1.0, 1: 1.3, 2: 1.45, 3: 1.6, 4: 1.7}
VS_FA3_PER_SPEEDUP = 0.25


def step_speed(text: str) -> float:
    steps = [int(n) for n in re.findall(r"// step (\d+)", text)]
    return STEP_SPEED[max(steps, default=0)]


def step_evaluator(task: Task, **options: Any) -> Any:
    """For session processes (``--evaluator``): the speed of the kernel's ``// step N`` mark,
    after sleeping $KS_TEST_DELAY seconds (0 when unset)."""
    delay = float(os.environ.get("KS_TEST_DELAY", "0") or 0)

    def judge(
        source: Path, sets: list[str] | None, *, knobs: dict[str, int] | None = None
    ) -> EvalResult:
        time.sleep(delay)
        speed = step_speed(source.read_text())
        return make_result(speed, vs_fa3=speed * VS_FA3_PER_SPEEDUP, sets=sets)

    return judge


class MessagesStandIn:
    """A local HTTP server answering ``POST /v1/messages`` with the recorded turn that follows
    the conversation it is sent (its assistant messages + 1), so it needs no state per session
    and a resumed session gets the turn it is at. Keeps every request body."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                with lock:
                    owner.requests.append(body)
                turn = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
                reply = (FIXTURES / f"turn_{min(turn, 20):02d}.sse").read_bytes()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def write_spec(path: Path, task_dir: Path, *, name: str = "ab", per_arm: int = 2,
               parallel: int = 2, agent: str = "claude") -> Path:  # fmt: skip
    """The two-arm experiment of the tests: questions from the repertoire against none."""
    path.write_text(
        f"""[experiment]
name = "{name}"
task = "{task_dir}"
sessions_per_arm = {per_arm}
parallel = {parallel}
evaluator = "tests.experiment_support:step_evaluator"

[session]
agent = "{agent}"
objective_sets = ["quick"]
plateau_evals = 3
seed = 7

[[arm]]
name = "questions"
questions = "repertoire"

[[arm]]
name = "off"
questions = "off"
"""
    )
    return path
