"""A real HTTP server on 127.0.0.1 that answers Schema Registry requests the way a failing registry
(or what stands in front of one) does: 401, 403, 429, a 200 with an HTML login page, a 200 JSON
body without ``schema``, an answer slower than the client's timeout, a 404 from a server that is
not a Schema Registry API at that URL.

It runs ``http.server`` in a thread so the real ``confluent_kafka.schema_registry.SchemaRegistryClient``
(httpx, retries, response parsing) is what the tests exercise -- no mock of the client.
Used by tests/unit/test_error_classes.py and tests/flink/test_registry_outage_flink.py.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["FailingRegistry", "ANSWERS"]

HTML_PAGE = b"<!doctype html><html><head><title>Sign in</title></head><body>Please sign in</body></html>"

# answer name -> (status, content type, body, delay seconds)
ANSWERS: Dict[str, Tuple[int, str, bytes, float]] = {
    "401": (401, "application/json", json.dumps({"error_code": 401, "message": "Unauthorized"}).encode(), 0.0),
    "403": (403, "application/json", json.dumps({"error_code": 40301, "message": "User is denied operation"}).encode(), 0.0),
    "429": (429, "application/json", json.dumps({"error_code": 429, "message": "Too Many Requests"}).encode(), 0.0),
    "html": (200, "text/html", HTML_PAGE, 0.0),
    "no_schema": (200, "application/json", json.dumps({"subject": "s", "version": 1}).encode(), 0.0),
    "slow": (200, "application/json", json.dumps({"schema": "\"string\""}).encode(), 3.0),
    # a web server's own 404, no Schema Registry error code: Apicurio Registry asked at its root
    # instead of /apis/ccompat/v7 (the body is the one it sends)
    "not_found": (404, "application/json", json.dumps({
        "detail": "NotFoundException: RESTEASY003210: Could not find resource for full path", "status": 404,
        "title": "RESTEASY003210: Could not find resource for full path", "name": "NotFoundException"}).encode(), 0.0),
}


class FailingRegistry:
    """``with FailingRegistry("401") as reg: SchemaRegistryClient(reg.client_conf())``.

    Every request gets the answer named by :attr:`answer` (changeable while running); the request
    lines are kept in :attr:`requests`.
    """

    def __init__(self, answer: str) -> None:
        if answer not in ANSWERS:
            raise ValueError(f"unknown answer {answer!r}; known: {sorted(ANSWERS)}")
        self.answer = answer
        self.requests: List[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def _reply(self) -> None:
                owner.requests.append(f"{self.command} {self.path}")
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                status, ctype, body, delay = ANSWERS[owner.answer]
                if delay:
                    time.sleep(delay)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", ctype)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _reply

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def client_conf(self, **extra: Any) -> Dict[str, Any]:
        """A client conf with quick retries (429 is retried by the client) and a 1 s timeout; 0.25 s
        for an answer that is slow on purpose (3 s), which needs only to exceed it."""
        timeout = 0.25 if ANSWERS[self.answer][3] else 1
        conf: Dict[str, Any] = {
            "url": self.url, "max.retries": 1, "retries.wait.ms": 1, "retries.max.wait.ms": 5, "timeout": timeout,
        }
        conf.update(extra)
        return conf

    def start(self) -> "FailingRegistry":
        # a short poll so that stop() (shutdown waits for the loop to notice) takes milliseconds, not 0.5 s
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), name="failing-registry",
                                        daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)

    def __enter__(self) -> "FailingRegistry":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
