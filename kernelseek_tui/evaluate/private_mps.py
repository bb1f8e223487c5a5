"""An MPS server of the judge's own, for kernels judged in processes of their own.

Why: a kernel in a process of its own and the judge are two processes on one GPU. Without MPS
each holds a context, which the GPU time-slices, and every timed call's hand-over between them
cost about 290 us on an H100; as clients of one MPS server, 5.6 us with the stream counters
(docs/BENCHMARKS.md, "Handing a call to another process"). scripts/with_private_mps.sh does the
same around one command; this is the judge's own, so that it can also restart the server.

Why restart: a kernel that never ends, killed with its process by the stall watchdog, leaves
the MPS server unable to take new clients (measured on an H100, 2026-12-06: the next evaluation
failed at its set-up with cudaErrorDevicesUnavailable). A private server can be stopped, its
processes killed if ``quit`` does not end them, and started afresh with the same directories,
which is what the clients find it by.

Private: its pipe and log directories are fresh temporary ones, so no other user's MPS server,
and no system-wide one, is touched; only processes given ``environment()`` become its clients.
The card's settings (compute mode, clocks, power) are never changed.
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from kernelseek_tui.evaluate.proc_stat import stat_fields

CONTROL = "nvidia-cuda-mps-control"
PIPE_VARIABLE = "CUDA_MPS_PIPE_DIRECTORY"
LOG_VARIABLE = "CUDA_MPS_LOG_DIRECTORY"
# "off": the judge never starts a server (isolated calls then carry the contexts' switching).
MPS_VARIABLE = "KERNELSEEK_MPS"
# Where the worker reads which GPU it was given when, as a client of a private server, it has
# no CUDA_VISIBLE_DEVICES of its own.
GPU_VARIABLE = "KERNELSEEK_GPU"
# /proc/<pid>/comm keeps 15 characters: the control daemon and the server both read so.
_MPS_COMM = "nvidia-cuda-mps"
# The private directories' prefix (scripts/with_private_mps.sh uses it too, with no owner file),
# and the file naming the process that started the server.
_PREFIX = "kernelseek-mps."
_OWNER = "owner"
# How long a started daemon has to show in /proc before ``daemon_gone`` gives up watching it.
_SEEN_WITHIN_S = 1.0


class MpsError(Exception):
    """The private MPS server could not be started."""


class PrivateMps:
    """A private MPS control daemon: ``start`` it, give ``environment()`` to every process
    that should be its client, ``restart`` it after a hang, ``stop`` it at the end."""

    def __init__(
        self,
        control: str = CONTROL,
        *,
        stop_timeout_s: float = 10.0,
        visible_devices: str | None = None,
        proc: Path = Path("/proc"),
    ) -> None:
        """``visible_devices``: the GPUs the server serves (the daemon's CUDA_VISIBLE_DEVICES;
        its clients then leave theirs unset, as NVIDIA's MPS guide asks); None: the daemon
        sees what this process sees."""
        self.control = control
        self.visible_devices = visible_devices
        self.stop_timeout_s = stop_timeout_s
        self._proc = proc
        self._root: Path | None = None
        self._daemon_up = False
        self._settings: tuple[float, dict[int, float]] | None = None
        # The daemon's process as seen once started, as {pid: start time} (``daemon_gone``
        # and ``own_processes`` know it by that, not by its name, which any process can take).
        self._daemon_ids: dict[int, str] = {}

    @property
    def running(self) -> bool:
        return self._daemon_up

    def environment(self) -> dict[str, str]:
        """The variables that make a process this server's client."""
        if self._root is None:
            raise MpsError("the private MPS server is not started")
        return {
            PIPE_VARIABLE: str(self._root / "pipe"),
            LOG_VARIABLE: str(self._root / "log"),
        }

    def start(self) -> dict[str, str]:
        """Start the control daemon (it starts the server when the first client comes);
        returns ``environment()``."""
        if self._root is not None and self._daemon_up:
            if not self.daemon_gone():
                return self.environment()
            self._daemon_up = False  # nothing of it is left: a new one, the same directories
        program = shutil.which(self.control)
        if program is None:
            raise MpsError(f"{self.control} not found (it comes with the NVIDIA driver)")
        if self._root is None:  # a restart keeps the directories: clients find it by them
            root = Path(tempfile.mkdtemp(prefix=_PREFIX))
            (root / "pipe").mkdir()
            (root / "log").mkdir()
            # Who started it: a server whose owner is gone is reaped by the next (reap_orphans).
            (root / _OWNER).write_text(_identity(os.getpid()))
            self._root = root
        root = self._root
        # The daemon forks and may keep whatever output it was given: a file, not a pipe this
        # process would wait on until the daemon ends.
        said_at = root / "log" / "start.out"
        with said_at.open("w") as said:
            started = subprocess.run(
                [program, "-d"],
                stdin=subprocess.DEVNULL,
                stdout=said,
                stderr=subprocess.STDOUT,
                env=self._daemon_environment(),
                timeout=30,
                check=False,
            )
        if started.returncode != 0:
            text = said_at.read_text().strip()
            self._forget()
            raise MpsError(f"{self.control} -d failed ({started.returncode}): {text}")
        self._daemon_up = True
        self._daemon_ids = self._settled_identities()
        self._settings = self._shares()  # a fresh daemon's: what every later answer must match
        return self.environment()

    def daemon_gone(self) -> bool:
        """Whether the daemon started here has ended without the judge asking: its process,
        known by its pid and start time, was seen once it started and is no longer running.
        False where none was seen then (a /proc that does not show them): never a guess.

        Why asked: a kernel's process (or the agent's shell) can reach the control daemon's
        socket (``share_settings`` says why) and send it ``quit``. The daemon then ends once
        its clients are done, and the next evaluation's processes, given this pipe directory,
        would find no server: each timed call would then carry the switching between two
        contexts (about 290 us on an H100), while the result still said it had a private MPS
        server."""
        if not self._daemon_up or not self._daemon_ids:
            return False
        # None of them left (not "one of them gone": a process caught in the scan at its start
        # may have been a short-lived child of the daemon's, as the tests' stand-in's are).
        alive = self._identities(list(self._daemon_ids))
        return not any(self._daemon_ids[pid] == start for pid, start in alive.items())

    def own_processes(self) -> list[int]:
        """The daemon this object started and the servers it started (their parent): not any
        process that only takes an MPS name and this pipe directory (a review, 2026-12-07 late:
        a decoy so named kept the daemon "running" after a ``quit``, and a GPU hog so named
        passed as the judge's own in the check of the GPU's other processes)."""
        daemons = {
            pid
            for pid, start in self._identities(list(self._daemon_ids)).items()
            if self._daemon_ids[pid] == start
        }
        own = []
        for pid in self.processes():
            fields = stat_fields(pid, self._proc)
            if pid in daemons or (
                fields is not None and fields[1].isdigit() and int(fields[1]) in daemons
            ):
                own.append(pid)
        return own

    def _identities(self, pids: list[int]) -> dict[int, str]:
        """{pid: start time} of those of ``pids`` still running (a pid reused later by another
        process has another start time)."""
        found = {}
        for pid in pids:
            fields = stat_fields(pid, self._proc)
            if fields is not None and fields[0] != "Z":
                found[pid] = fields[19]
        return found

    def _settled_identities(self) -> dict[int, str]:
        """The daemon's processes once it has started: those seen in two scans a moment apart
        (a short-lived child of the daemon's, caught by one scan, is not the daemon)."""
        first = self._wait_for_processes(_SEEN_WITHIN_S)
        if not first:
            return {}
        time.sleep(0.05)
        before = self._identities(first)
        now = self._identities(self.processes())
        kept = {pid: start for pid, start in now.items() if before.get(pid) == start}
        return kept or now

    def _wait_for_processes(self, within_s: float) -> list[int]:
        """The MPS processes of this pipe directory once any shows, within ``within_s`` seconds
        (the daemon forks as ``-d`` returns; its child may take a moment to show in /proc)."""
        deadline = time.monotonic() + within_s
        while True:
            found = self.processes()
            if found or time.monotonic() >= deadline:
                return found
            time.sleep(0.02)

    def share_settings(self) -> str | None:
        """The share of the GPU a new client of this daemon gets, as the daemon answers:
        ``default <percentage>`` and ``server <pid> <percentage>`` for each server running;
        None where it gives no answer it can be read by (not started, the control program
        failing, an answer not a number).

        Why asked: a kernel's process may write the pipe directory (CUDA needs it), and neither
        Landlock nor the seccomp filter can refuse a connection to the control daemon's socket
        there. Through it a kernel could lower the share of every client started later (the
        next candidates and their peers, not the starting kernel whose times are cached), so the
        judge compares the answer after each evaluation with the one before
        (``settings_changed``)."""
        shares = self._shares()
        return None if shares is None else _said(shares)

    def settings_changed(self) -> str | None:
        """How the daemon's answer differs from the one it gave when it started: its default
        share, or any server's, not the default kept (a server started since with that share is
        no change); None where it does not, or where either answer could not be read. Shares
        are compared as numbers, so "100" and "100.0" are the same answer."""
        before, now = self._settings, self._shares()
        if before is None or now is None:
            return None
        default, _ = before
        shares = [now[0], *now[1].values()]
        if all(abs(share - default) < 1e-6 for share in shares):
            return None
        return f"{_said(before)} before, {_said(now)} after"

    def _shares(self) -> tuple[float, dict[int, float]] | None:
        """(default share, {server pid: its share}) as the daemon answers, or None."""
        if self._root is None or not self._daemon_up:
            return None
        default = _number(self._ask("get_default_active_thread_percentage"))
        servers = self._ask("get_server_list")
        if default is None or servers is None:
            return None
        shares: dict[int, float] = {}
        for pid in servers.split():
            share = _number(self._ask(f"get_active_thread_percentage {pid}"))
            if not pid.isdigit() or share is None:
                return None
            shares[int(pid)] = share
        return default, shares

    def _ask(self, command: str) -> str | None:
        """The daemon's answer to one command, or None where the control program fails or
        takes more than a couple of seconds (asked after every evaluation: a stuck daemon must
        not hold the loop for long)."""
        try:
            answered = self._control(command + "\n", timeout_s=min(2.0, self.stop_timeout_s))
        except (OSError, subprocess.SubprocessError):
            return None
        if answered.returncode != 0:
            return None
        return answered.stdout.strip()

    def processes(self) -> list[int]:
        """The MPS processes (control daemon, servers) serving this private pipe directory."""
        if self._root is None:
            return []
        ours = f"{PIPE_VARIABLE}={self._root / 'pipe'}".encode()
        found = []
        for entry in self._proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if not (entry / "comm").read_text().startswith(_MPS_COMM):
                    continue
                environment = (entry / "environ").read_bytes().split(b"\0")
            except OSError:
                continue  # gone meanwhile, or another user's
            if ours in environment:
                found.append(int(entry.name))
        return sorted(found)

    def stop(self) -> list[str]:
        """Quit the daemon, kill what of it is left, remove its directories. Returns what it
        had to do beyond ``quit`` (for the caller's log)."""
        notes = self._quit()
        self._forget()
        return notes

    def restart(self) -> list[str]:
        """Quit (killing what is left) and start again in the same directories, so a client
        started afterwards, with the same ``environment()``, finds the new server; one
        started before is lost with the old one."""
        notes = self._quit()
        self.start()
        return notes

    def _quit(self) -> list[str]:
        """``quit``; then kill what of the daemon and its servers is left after
        ``stop_timeout_s``."""
        if self._root is None or not self._daemon_up:
            return []
        if self.daemon_gone():  # nothing left to ask or to kill
            self._daemon_up = False
            return ["the control daemon had already ended"]
        self._daemon_up = False
        notes: list[str] = []
        try:
            quitting = self._control("quit\n", timeout_s=self.stop_timeout_s)
            if quitting.returncode != 0:
                notes.append(f"quit answered {quitting.returncode}")
        except subprocess.TimeoutExpired:
            notes.append(f"quit did not return in {self.stop_timeout_s:g} s")
        except OSError as error:  # the control program gone meanwhile: kill what is left
            notes.append(f"quit could not be sent: {error}")
        deadline = time.monotonic() + self.stop_timeout_s
        while self.processes() and time.monotonic() < deadline:
            time.sleep(0.05)
        left = self.processes()
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        if left:
            notes.append(f"killed MPS process(es) {', '.join(map(str, left))} after quit")
        return notes

    def _daemon_environment(self) -> dict[str, str]:
        environment = {**os.environ, **self.environment()}
        if self.visible_devices is not None:
            environment["CUDA_VISIBLE_DEVICES"] = self.visible_devices
        return environment

    def _control(self, command: str, *, timeout_s: float) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [self.control],
            input=command,
            capture_output=True,
            text=True,
            env=self._daemon_environment(),
            timeout=timeout_s,
            check=False,
        )

    def _forget(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
        self._root = None
        self._daemon_up = False
        self._daemon_ids = {}


def _number(answer: str | None) -> float | None:
    """A share as the daemon writes it ("100.0"), or None for anything else."""
    try:
        return float(answer) if answer else None
    except ValueError:
        return None


def _said(shares: tuple[float, dict[int, float]]) -> str:
    default, servers = shares
    parts = [f"default {default:g}", *(f"server {pid} {share:g}" for pid, share in servers.items())]
    return "; ".join(parts)


def _identity(pid: int, proc: Path = Path("/proc")) -> str:
    """A process as "<pid> <start time>": a pid reused by a later process does not match."""
    fields = stat_fields(pid, proc)
    return f"{pid} gone" if fields is None else f"{pid} {fields[19]}"


def reap_orphans(control: str = CONTROL, proc: Path = Path("/proc")) -> list[Path]:
    """Stop the private servers whose owner is gone (killed before it could stop them: a
    SIGKILL runs no exit handler) and remove their directories; returns those directories.
    Servers with no owner file (the script's) or another user's are left alone."""
    reaped = []
    for root in Path(tempfile.gettempdir()).glob(f"{_PREFIX}*"):
        try:
            recorded = (root / _OWNER).read_text().strip()
            pid = int(recorded.split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if _identity(pid, proc) == recorded:
            continue  # its owner still runs
        orphan = PrivateMps(control, proc=proc)
        orphan._root, orphan._daemon_up = root, True
        orphan.stop()
        reaped.append(root)
    return reaped


@dataclass(frozen=True, slots=True)
class MpsChoice:
    """How an isolated evaluation's processes share the GPU: the variables its worker gets,
    the judge's own server when it is one (restartable), and what the result says."""

    said: str
    environment: dict[str, str] = field(default_factory=dict)
    server: PrivateMps | None = None

    def client_environment(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` (a worker's) made a client of the chosen server."""
        if self.server is None:
            return env
        client = {**env, **self.environment}
        visible = client.pop("CUDA_VISIBLE_DEVICES", None)
        if visible is not None:  # the server sees only that GPU; the client must not narrow it
            client[GPU_VARIABLE] = visible
        return client


_SERVERS: dict[str | None, PrivateMps] = {}
_SERVERS_LOCK = threading.Lock()
_NO_MPS = "every timed call carries the switching between the two processes' contexts"


def mps_for_isolation(visible_devices: str | None, control: str = CONTROL) -> MpsChoice:
    """The MPS server for kernels judged in processes of their own on ``visible_devices`` (the
    worker's CUDA_VISIBLE_DEVICES): the one the environment names if any, else the judge's own
    for those GPUs, started on first use and kept for this process's life; none where
    ``KERNELSEEK_MPS=off`` or no server can be started (said, with what it costs)."""
    if os.environ.get(PIPE_VARIABLE):
        return MpsChoice(f"the MPS server of {PIPE_VARIABLE}={os.environ[PIPE_VARIABLE]}")
    if os.environ.get(MPS_VARIABLE) == "off":
        return MpsChoice(f"none ({MPS_VARIABLE}=off): {_NO_MPS}")
    with _SERVERS_LOCK:
        server = _SERVERS.get(visible_devices)
        if server is None:
            if not _SERVERS:  # once a process: what killed judges left running
                reap_orphans(control)
            server = PrivateMps(control, visible_devices=visible_devices)
            _SERVERS[visible_devices] = server
        try:
            environment = server.start()
        except (MpsError, OSError, subprocess.SubprocessError) as error:
            return MpsChoice(f"none ({error}): {_NO_MPS}")
    return MpsChoice("a private MPS server started by the judge", environment, server)


def join_for_isolation() -> MpsChoice:
    """Make this process a client of the MPS server the judge's isolation would use (as
    ``mps_for_isolation`` picks it), before CUDA starts here: for a benchmark that times
    kernels' processes from its own, as the worker does."""
    mps = mps_for_isolation(os.environ.get("CUDA_VISIBLE_DEVICES"))
    client = mps.client_environment(dict(os.environ))
    os.environ.clear()
    os.environ.update(client)
    return mps


@atexit.register
def _stop_servers() -> None:
    with _SERVERS_LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for server in servers:
        server.stop()
