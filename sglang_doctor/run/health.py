"""The HTTP health check of a launched server (sglang-notes §5).

``GET /health`` answers 503 while SGLang warms up and 200 once a 1-token generation came
back.  The check runs locally with urllib, or, when the server runs behind ``--via``
(``ssh host pct exec 129 --``), through the same prefix with curl on the far side.
"""

from __future__ import annotations

import re
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any


@dataclass
class HealthResult:
    ok: bool
    status: int | None  # the HTTP status, None when nothing answered
    detail: str


_HOSTNAME = re.compile(r"(?=.{1,253}$)(?!-)[A-Za-z0-9-]{1,63}(?<!-)(?:\.(?!-)[A-Za-z0-9-]{1,63}(?<!-))*\.?")


def valid_host(host: Any) -> bool:
    """An IP literal or a host name's syntax (letters, digits, '-', '.'): nothing a shell,
    a URL or curl could read as anything else.  Never resolved here."""
    if not isinstance(host, str) or not host:
        return False
    for family in (socket.AF_INET, socket.AF_INET6):
        try:
            socket.inet_pton(family, host)
            return True
        except (OSError, ValueError):
            pass
    return _HOSTNAME.fullmatch(host) is not None


def valid_port(port: Any) -> bool:
    if isinstance(port, bool):
        return False
    if isinstance(port, str):
        if not port.isascii() or not port.isdigit():
            return False
        port = int(port)
    return isinstance(port, int) and 1 <= port <= 65535


def check_url(url: str) -> str | None:
    """Why ``url`` cannot be a health-check URL (http or https, a valid host), or None."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError as exc:
        return f"not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return "must start with http:// or https://"
    if not valid_host(parts.hostname):
        return "needs a host (an IP address or a host name)"
    if port is not None and not valid_port(port):
        return "port must be 1-65535"
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in url):
        return "contains spaces or control characters"
    return None


def url_for(host: str | None, port: int | None) -> str:
    """The /health URL of a server: host and port validated, 127.0.0.1:30000 otherwise."""
    host = host if valid_host(host) else "127.0.0.1"
    port = int(port) if valid_port(port) else 30000
    if host in ("0.0.0.0", "::", ""):
        host = "127.0.0.1"
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}/health"


def check_once(url: str, via: list[str] | None = None, timeout: float = 25.0, quoting: str = "auto") -> HealthResult:
    if via:
        return _check_via(url, via, timeout, quoting)
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="GET"), timeout=timeout) as resp:
            return HealthResult(resp.status == 200, resp.status, f"HTTP {resp.status}")
    except urllib.error.HTTPError as exc:
        return HealthResult(False, exc.code, f"HTTP {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return HealthResult(False, None, f"no answer ({reason})")


def _check_via(url: str, via: list[str], timeout: float, quoting: str = "auto") -> HealthResult:
    """curl (else python3) on the far side, the URL passed as an argument, quoted for a remote shell."""
    from sglang_doctor.run import wrapper

    if check_url(url) is not None:
        return HealthResult(False, None, f"refused health URL {url!r}: {check_url(url)}")
    argv = wrapper.health_argv(url, timeout, via, quoting)
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout + 10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return HealthResult(False, None, f"health check through {via[0]} failed ({exc})")
    code = out.stdout.strip()
    status = int(code) if code.isdigit() and code != "000" else None
    return HealthResult(status == 200, status, f"HTTP {code}" if status else "no answer")


def wait_healthy(url: str, *, deadline_s: float, via: list[str] | None = None, interval: float = 1.0,
                 alive=lambda: True, quoting: str = "auto") -> HealthResult:
    """Poll until 200, the deadline, or ``alive()`` turns false (the server died meanwhile)."""
    end = time.monotonic() + deadline_s
    last = HealthResult(False, None, "not checked")
    while time.monotonic() < end and alive():
        last = check_once(url, via, timeout=min(25.0, max(1.0, end - time.monotonic())), quoting=quoting)
        if last.ok:
            return last
        time.sleep(interval)
    return last
