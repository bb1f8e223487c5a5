"""The engine's control side: the inbox (questions, pause, resume, stop) and the checkpoint
every tool call and model call passes through."""

from __future__ import annotations

from kernelseek_tui.session import inbox
from kernelseek_tui.session.agents.base import SessionStop
from kernelseek_tui.session.engine.core import EngineCore
from kernelseek_tui.session.inbox import InboxCommand
from kernelseek_tui.session.meta import PAUSED, RUNNING

POLL_S = 0.2


class ControlMixin(EngineCore):
    """Checkpoints and inbox commands."""

    def checkpoint(self) -> None:
        self._fill_inbox_queue()
        while self._inbox_queue:
            self._handle_command(self._inbox_queue.popleft())
        self._check_time()
        self._touch_meta()
        if self._stop is not None:
            raise SessionStop(*self._stop)

    def _fill_inbox_queue(self) -> None:
        self._inbox_queue.extend(self.inbox.read())

    def _handle_command(self, command: InboxCommand) -> None:
        if command.type == inbox.QUESTION:
            assert command.text is not None
            self.ask(
                command.text,
                question_id=command.question_id,
                source=command.source,
                trigger="manual",
                attrs=command.to_attrs(),
            )
        elif command.type == inbox.PAUSE:
            self._pause(command)
        elif command.type == inbox.RESUME:
            self._append("control", flush=True, text="resume: not paused", attrs=command.to_attrs())
        elif command.type == inbox.STOP:
            self._append("control", flush=True, text="stop requested", attrs=command.to_attrs())
            self._request_stop("stop", "stopped from the inbox")
        else:
            self.record_error(f"inbox: {command.error}", attrs=command.to_attrs())

    def _pause(self, command: InboxCommand) -> None:
        self._append(
            "control", flush=True, text="paused", attrs={**command.to_attrs(), "action": "pause"}
        )
        self.meta.status = PAUSED
        self._write_meta()
        try:
            while True:
                self._fill_inbox_queue()
                while self._inbox_queue:
                    nxt = self._inbox_queue.popleft()
                    if nxt.type == inbox.RESUME:
                        self._append(
                            "control",
                            flush=True,
                            text="resumed",
                            attrs={**nxt.to_attrs(), "action": "unpause"},
                        )
                        return
                    if nxt.type == inbox.STOP:
                        self._handle_command(nxt)
                        return
                    if nxt.type == inbox.PAUSE:
                        self._append(
                            "control", flush=True, text="already paused", attrs=nxt.to_attrs()
                        )
                    else:
                        self._handle_command(nxt)
                if self._terminate.is_set():
                    self._request_stop("terminated", "SIGTERM while paused")
                    return
                self._touch_meta()
                self._sleep(POLL_S)
        finally:
            self.meta.status = RUNNING
            self._write_meta()
