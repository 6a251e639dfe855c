"""The HTTP side: a static page and JSON endpoints, from the standard library's threading
server (one local user; nothing here needs more)."""
from __future__ import annotations

import errno
import json
import sys
import traceback
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import parse_qs, urlparse

from suse.dashboard.live import Live
from suse.errors import InputError, SuseError

HOST = "127.0.0.1"
MAX_MATCH_INDEX = 100_000
STATIC = {  # name -> content type; files shipped in suse/dashboard/static
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}


def plotly_js() -> Path:
    """plotly.js as shipped inside the plotly Python package: nothing comes from a CDN."""
    try:
        import plotly
    except ModuleNotFoundError:
        raise InputError("`suse serve` needs plotly: pip install 'suse[dashboard]'") from None
    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.exists():
        raise InputError(f"plotly is installed but {path} is missing; reinstall plotly")
    return path


def bind(port: int) -> ThreadingHTTPServer:
    """The listening socket, before any slow start-up work, so a busy port fails at once."""
    try:
        server = ThreadingHTTPServer((HOST, port), Handler)
    except OverflowError:
        raise InputError(f"port {port} is out of range (0-65535)") from None
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {HOST} is in use; pick another with --port") from None
        raise InputError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    server.daemon_threads = True
    server.live = None  # set once the job is loaded
    server.plotly = plotly_js()
    server.refresh_seconds = 5.0
    return server


class Handler(BaseHTTPRequestHandler):
    server_version = "suse"

    def log_message(self, format: str, *args) -> None:  # noqa: A002  (quiet: one request a second)
        pass

    @property
    def live(self) -> Live:
        live = self.server.live  # type: ignore[attr-defined]
        if live is None:
            raise _NotReady
        return live

    def do_GET(self) -> None:  # noqa: N802
        url = urlparse(self.path)
        args = {k: v[-1] for k, v in parse_qs(url.query).items()}
        path = url.path
        if path in ("/", "/index.html"):
            return self._static("index.html")
        if path == "/favicon.ico":
            return self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
        if path.startswith("/static/"):
            name = path.removeprefix("/static/")
            if name == "plotly.min.js":
                return self._file(self.server.plotly, "text/javascript; charset=utf-8")  # type: ignore[attr-defined]
            if name in STATIC:
                return self._static(name)
            return self._error(HTTPStatus.NOT_FOUND, f"no such file: {path}")
        routes: dict[str, Callable[[dict], object]] = {
            "/api/meta": lambda a: {**self.live.meta(), "refresh_seconds": self.server.refresh_seconds},  # type: ignore[attr-defined]
            "/api/status": lambda a: self.live.status(),
            "/api/table": lambda a: self.live.table(_int(a, "q", 0)),
            "/api/partition": lambda a: self.live.partition(_int(a, "q", 0), _int(a, "pid")),
            "/api/match": self._match,
        }
        if path not in routes:
            return self._error(HTTPStatus.NOT_FOUND, f"no such page: {path}")
        self._answer(lambda: routes[path](args))

    def do_POST(self) -> None:  # noqa: N802
        if urlparse(self.path).path != "/api/refresh":
            return self._error(HTTPStatus.NOT_FOUND, f"no such endpoint: {self.path}")
        self._answer(lambda: self.live.refresh())

    def _match(self, args: dict) -> dict:
        q, pid = _int(args, "q", 0), _int(args, "pid")
        strategy = args.get("strategy", self.live.settings.strategies[0])
        n = _int(args, "n", 0)
        if n > MAX_MATCH_INDEX:
            raise InputError(f"n: at most {MAX_MATCH_INDEX}")
        containing = _int(args, "containing") if "containing" in args else None
        return self.live.match(q, pid, strategy, n, containing)

    # --- replies --------------------------------------------------------------------------

    def _answer(self, make: Callable[[], object]) -> None:
        try:
            body = make()
        except _NotReady:
            return self._error(HTTPStatus.SERVICE_UNAVAILABLE, "the job is still loading")
        except SuseError as exc:
            return self._error(HTTPStatus.BAD_REQUEST, str(exc))
        except Exception as exc:  # a bug of ours: answer and say so on the server's stderr
            traceback.print_exc(file=sys.stderr)
            return self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"internal error: {type(exc).__name__}: {exc}")
        self._send(HTTPStatus.OK, json.dumps(body).encode(), "application/json")

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, json.dumps({"error": message}).encode(), "application/json")

    def _static(self, name: str) -> None:
        data = resources.files("suse.dashboard").joinpath("static", name).read_bytes()
        self._send(HTTPStatus.OK, data, STATIC[name])

    def _file(self, path: Path, kind: str) -> None:
        self._send(HTTPStatus.OK, path.read_bytes(), kind, cache=True)

    def _send(self, status: HTTPStatus, data: bytes, kind: str, cache: bool = False) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "max-age=3600" if cache else "no-store")
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the browser went away mid-answer
            pass


class _NotReady(Exception):
    pass


def _int(args: dict, name: str, default: Optional[int] = None) -> int:
    if name not in args:
        if default is None:
            raise InputError(f"missing parameter {name!r}")
        return default
    try:
        return int(args[name])
    except ValueError:
        raise InputError(f"{name}: {args[name]!r} is not an integer") from None
