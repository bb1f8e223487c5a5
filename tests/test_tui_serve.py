"""`kernelseek serve`: the page works through an SSH tunnel and asks no other server for
anything; a wrong path or a busy port is one line before anything listens; a recorded session
is served with its git history. Only localhost is ever reached."""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient, TestServer

from kernelseek_tui.browse.session_data import load_session
from kernelseek_tui.commands.serve import resolve_target
from kernelseek_tui.commands.serve_web import LocalServer
from tests.test_tui_cli import kernelseek

ROOT = Path(__file__).resolve().parents[1]
# What a page may load: href/src attributes and CSS url(...).
_FETCHED = re.compile(r"""(?:href|src)\s*=\s*["']([^"']+)["']|url\(\s*["']?([^"')]+)""")


def page(headers: dict[str, str]) -> str:
    """The index page as a browser with these headers gets it (server told port 8000)."""

    async def fetch() -> str:
        server = LocalServer("true", host="localhost", port=8000, title="kernelseek")
        async with TestClient(TestServer(await server._make_app())) as client:
            response = await client.get("/", headers=headers)
            assert response.status == 200
            return await response.text()

    return asyncio.run(fetch())


def fetched_urls(html: str) -> list[str]:
    return [a or b for a, b in _FETCHED.findall(html)]


def test_the_page_names_the_host_the_browser_used_through_a_tunnel() -> None:
    # ssh -L 9000:localhost:8000: the browser asks localhost:9000 for everything.
    html = page({"Host": "localhost:9000"})
    assert 'data-session-websocket-url="ws://localhost:9000/ws"' in html
    assert "localhost:8000" not in html
    assert "http://localhost:9000/static/js/textual.js" in html


def test_behind_https_the_websocket_is_wss() -> None:
    html = page({"Host": "gpu.example:443", "X-Forwarded-Proto": "https"})
    assert 'data-session-websocket-url="wss://gpu.example:443/ws"' in html


def test_the_page_asks_no_other_server_for_anything() -> None:
    html = page({"Host": "localhost:9000"})
    urls = fetched_urls(html)
    assert urls, "the page loads its script and styles from us"
    for url in urls:
        remote = re.match(r"(?:[a-z]+:)?//([^/]+)", url)
        assert remote is None or remote.group(1) == "localhost:9000", url
    assert "googleapis" not in html


def test_a_path_that_is_no_session_is_refused_before_serving(tmp_path: Path) -> None:
    result = kernelseek("serve", "--port", "1", str(tmp_path / "nonexistent"))
    assert result.returncode == 2 and "serving" not in result.stdout
    assert result.stderr.strip().splitlines() == [
        f"kernelseek serve: error: {tmp_path / 'nonexistent'} is not a directory"
    ]


def test_a_port_in_use_is_one_line() -> None:
    with socket.socket() as taken:
        taken.bind(("localhost", 0))
        taken.listen()
        port = taken.getsockname()[1]
        demo = ROOT / "traces" / "demo"
        result = kernelseek("serve", "--port", str(port), str(demo / "scripted-claude"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"kernelseek serve: error: port {port} on localhost is in use: stop what listens there "
        "or choose another with --port"
    ]


def test_a_recorded_session_is_served_with_its_git_history(tmp_path: Path) -> None:
    raw = ROOT / "traces" / "demo" / "scripted-claude"
    assert load_session(raw).history is None  # as recorded: its repository is elsewhere
    args = argparse.Namespace(path=str(raw), live=False)
    served = Path(resolve_target(args, tmp_path) or "")
    assert served.is_relative_to(tmp_path)
    data = load_session(served)
    assert data.history is not None and data.history.candidates()


@pytest.mark.parametrize("live", [False, True])
def test_a_plain_session_is_served_where_it_is(tmp_path: Path, live: bool) -> None:
    from tests.tui_support import unpacked_demo

    root = unpacked_demo(tmp_path / "demo")
    target = root / "scripted-claude"
    args = argparse.Namespace(path=str(target), live=live)
    assert resolve_target(args, tmp_path / "scratch") == str(target.resolve())
    assert not (tmp_path / "scratch").exists()
