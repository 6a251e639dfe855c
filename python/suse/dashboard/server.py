"""The HTTP side: a static page and JSON endpoints, a Starlette app served by uvicorn.

Why not the standard library's ``http.server`` (what this was before): its listen
backlog of 5 left a burst of readers waiting on SYN retries (13-45 of 200 concurrent
``GET /api/status`` timed out after 40 s; here all 200 answer, bench/dashboard_load.py), it
has no graceful shutdown, and every check below would have been hand-written. Starlette
gives routing, JSON that refuses NaN and infinities, and the trusted-host check; uvicorn a
real backlog and a shutdown that lets answers in flight finish.

Only the local user may read or change the page:
* the socket listens on 127.0.0.1 only;
* the Host header must be 127.0.0.1 or localhost, so a page on another site that rebinds its
  DNS name to 127.0.0.1 gets ``400`` instead of the data;
* ``POST`` (an evaluation) is refused with ``403`` when the browser says it comes from
  another site (``Sec-Fetch-Site``, ``Origin``); a tool such as curl sends neither and is
  the local user's own.
"""
from __future__ import annotations

import contextlib
import errno
import socket
import sys
import traceback
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Callable, Optional

import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from suse.dashboard.live import Live
from suse.errors import InputError, SuseError

HOST = "127.0.0.1"
TRUSTED_HOSTS = ["127.0.0.1", "localhost"]
BACKLOG = 1024  # pending connections the kernel keeps (capped by net.core.somaxconn)
SHUTDOWN_SECONDS = 5  # answers in flight get this long to finish after Ctrl-C
MAX_MATCH_INDEX = 100_000
STATIC = {  # name -> content type; files shipped in suse/dashboard/static
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "style.css": "text/css; charset=utf-8",
}
NO_STORE = {"Cache-Control": "no-store"}


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


@dataclass
class Page:
    """What the endpoints read: the job's live state once it is loaded."""

    plotly: Path
    refresh_seconds: float = 5.0
    live: Optional[Live] = None


def bind(port: int) -> socket.socket:
    """The listening socket, before any slow start-up work, so a busy port fails at once."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a restart need not wait for TIME_WAIT
        sock.bind((HOST, port))
        sock.listen(BACKLOG)
    except OverflowError:
        sock.close()
        raise InputError(f"port {port} is out of range (0-65535)") from None
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise InputError(f"port {port} on {HOST} is in use; pick another with --port") from None
        raise InputError(f"cannot listen on {HOST}:{port}: {exc.strerror}") from None
    return sock


class PageServer:
    """The bound socket and the server that answers on it once ``serve`` is called."""

    def __init__(self, port: int):
        self.socket = bind(port)
        self.page = Page(plotly_js())
        config = uvicorn.Config(
            app(self.page), log_config=None, log_level="warning", access_log=False, lifespan="off",
            backlog=BACKLOG, timeout_graceful_shutdown=SHUTDOWN_SECONDS, server_header=False,
        )
        self._server = _Uvicorn(config)

    @property
    def address(self) -> tuple[str, int]:
        host, port = self.socket.getsockname()[:2]
        return host, port

    def serve(self) -> None:
        """Answer requests until ``shutdown``; answers in flight then finish."""
        self._server.run(sockets=[self.socket])

    def shutdown(self) -> None:
        """Ask ``serve`` to return (from a signal handler or another thread)."""
        self._server.should_exit = True

    def close(self) -> None:
        self.socket.close()


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handling: `serve` owns SIGINT and SIGTERM (they also
    interrupt the start-up, before uvicorn runs)."""

    @contextlib.contextmanager
    def capture_signals(self):
        yield


# --- the application --------------------------------------------------------------------------


def app(page: Page):
    """The Starlette application over ``page``."""
    def api(make: Callable[[Live, dict], object]):
        def endpoint(request):  # a plain function: Starlette runs it in a worker thread
            return _answer(page, make, dict(request.query_params))
        return endpoint

    routes = [
        Route("/", _static("index.html")),
        Route("/index.html", _static("index.html")),
        Route("/favicon.ico", lambda request: _response(b"", 204, "image/x-icon")),
        Route("/static/{name}", lambda request: _static_file(page, request.path_params["name"])),
        Route("/api/meta", api(lambda live, a: {**live.meta(), "refresh_seconds": page.refresh_seconds})),
        Route("/api/status", api(lambda live, a: live.status())),
        Route("/api/table", api(lambda live, a: live.table(_int(a, "q", 0)))),
        Route("/api/partition", api(lambda live, a: live.partition(_int(a, "q", 0), _int(a, "pid")))),
        Route("/api/match", api(_match)),
        Route("/api/refresh", api(lambda live, a: live.refresh()), methods=["POST"]),
    ]
    handlers = {
        404: lambda request, exc: _error(404, f"no such page: {request.url.path}"),
        405: lambda request, exc: _error(405, f"{request.method} is not allowed on {request.url.path}"),
    }
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=TRUSTED_HOSTS), Middleware(SameSiteWrites)]
    return Starlette(routes=routes, middleware=middleware, exception_handlers=handlers)


class SameSiteWrites:
    """Refuse a request that changes something (any method but GET/HEAD) when the browser
    says another site sent it. Browsers send ``Sec-Fetch-Site`` (and ``Origin`` on a POST);
    a page of ours sends ``same-origin`` and its own origin."""

    SAFE = ("GET", "HEAD", "OPTIONS")

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] not in self.SAFE and not _same_site(scope):
            await _error(403, "refused: a request from another site may not change the page")(scope, receive, send)
            return
        await self.app(scope, receive, send)


def _same_site(scope) -> bool:
    headers = Headers(scope=scope)
    site, origin = headers.get("sec-fetch-site"), headers.get("origin")
    if site is not None and site not in ("same-origin", "none"):  # "none": typed by the user
        return False
    return origin is None or origin == f"http://{headers.get('host', '')}"  # the Host is trusted already


def _answer(page: Page, make: Callable[[Live, dict], object], args: dict):
    try:
        if page.live is None:
            return _error(503, "the job is still loading")
        return JSONResponse(make(page.live, args), headers=NO_STORE)  # refuses NaN and infinities
    except SuseError as exc:
        return _error(400, str(exc))
    except Exception as exc:  # a bug of ours: answer and say so on the server's stderr
        traceback.print_exc(file=sys.stderr)
        return _error(500, f"internal error: {type(exc).__name__}: {exc}")


def _match(live: Live, args: dict) -> dict:
    q, pid = _int(args, "q", 0), _int(args, "pid")
    strategy = args.get("strategy", live.settings.strategies[0])
    n = _int(args, "n", 0)
    if n > MAX_MATCH_INDEX:
        raise InputError(f"n: at most {MAX_MATCH_INDEX}")
    containing = _int(args, "containing") if "containing" in args else None
    return live.match(q, pid, strategy, n, containing)


def _error(status: int, message: str):
    return JSONResponse({"error": message}, status_code=status, headers=NO_STORE)


def _response(data: bytes, status: int, kind: str, cache: bool = False):
    return Response(data, status, {"Cache-Control": "max-age=3600" if cache else "no-store"}, kind)


def _static(name: str):
    def endpoint(request):
        return _response(resources.files("suse.dashboard").joinpath("static").joinpath(name).read_bytes(), 200, STATIC[name])
    return endpoint


def _static_file(page: Page, name: str):
    if name == "plotly.min.js":
        return _response(page.plotly.read_bytes(), 200, "text/javascript; charset=utf-8", cache=True)
    if name in STATIC:  # only the shipped files: no path from the request reaches the disk
        return _static(name)(None)
    return _error(404, f"no such file: /static/{name}")


def _int(args: dict, name: str, default: Optional[int] = None) -> int:
    if name not in args:
        if default is None:
            raise InputError(f"missing parameter {name!r}")
        return default
    text = args[name]
    if len(text) > 30 or not text.strip().lstrip("+-").isdecimal() or not text.strip().isascii():
        raise InputError(f"{name}: {text[:30]!r} is not an integer")
    return int(text)
