"""textual-serve as `kernelseek serve` needs it: for a tool used over SSH on GPU boxes.

Three changes to textual-serve's own server:
- The page's URLs (the websocket, the static files) are built from the request's ``Host``
  header, not from ``--host``/``--port``: behind ``ssh -L 9000:localhost:8000`` the browser
  asks for ``localhost:9000``, and a page naming ``localhost:8000`` never loads.
- The page asks no other server for anything: textual-serve's template loads a web font from
  a third-party site, which an offline box cannot reach and a private one should not tell.
- Its banner is left out; the command prints one line of its own.
"""

from __future__ import annotations

import re
from typing import Any, Final

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

TEMPLATE: Final = "app_index.html"
# A <link> (a stylesheet, a font) that names another server.
_REMOTE_LINK: Final = re.compile(r"<link\b[^>]*\bhref=\"(?:https?:)?//[^>]*>\s*", re.S)


def local_template(text: str) -> str:
    """textual-serve's page template without the links to other servers."""
    return _REMOTE_LINK.sub("", text)


def base_url(request: web.Request) -> str:
    """``scheme://host[:port]`` as the browser reached us (what the ``Host`` header says)."""
    scheme = request.headers.get("X-Forwarded-Proto", request.scheme)
    return f"{scheme}://{request.host}"


class LocalServer(Server):
    """textual-serve's server with the changes in the module docstring."""

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        page = local_template((self.templates_path / TEMPLATE).read_text(encoding="utf-8"))
        aiohttp_jinja2.setup(app, loader=jinja2.DictLoader({TEMPLATE: page}))
        return app

    async def on_startup(self, app: web.Application) -> None:
        """Quiet: ``kernelseek serve`` has said where it serves."""

    @aiohttp_jinja2.template(TEMPLATE)
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = base_url(request)
        router = request.app.router
        websocket = base + str(router["websocket"].url_for())
        static = base + str(router["static"].url_for(filename="/")).rstrip("/") + "/"
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": ("wss:" if base.startswith("https") else "ws:")
            + websocket.split(":", 1)[1],
            "config": {"static": {"url": static}},
            "application": {"name": self.title},
        }
