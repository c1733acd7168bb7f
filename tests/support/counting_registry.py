"""A real HTTP Schema Registry stand-in on 127.0.0.1 that counts the requests it answers.

Known schema ids (``ids``, or every id up to ``any_id_below`` with one schema) are answered as
``GET /schemas/ids/{id}`` answers them; every other id and every GUID is a 404 (error code 40403);
registering under a subject (``POST /subjects/{s}/versions``) is a 409 when ``reject_subjects`` is
set, else gives id 1; a latest-version or lookup request is a 404. The real
``confluent_kafka.schema_registry.SchemaRegistryClient`` (and its async twin) talk to it, so what the
tests count is what a consumer would send to a registry. Used by tests/unit/test_hostile_caches.py.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

__all__ = ["CountingRegistry"]

_ID = re.compile(r"^/schemas/ids/(\d+)")


class CountingRegistry:
    """``with CountingRegistry({1: ('"string"', "AVRO")}) as reg: registry_client(reg.url)``."""

    def __init__(
        self, ids: Optional[Dict[int, Tuple[str, str]]] = None, any_id_below: int = 0,
        any_schema: Tuple[str, str] = ('"string"', "AVRO"), reject_subjects: bool = False,
    ) -> None:
        self.ids = dict(ids or {})
        self.any_id_below = any_id_below
        self.any_schema = any_schema
        self.reject_subjects = reject_subjects
        self.requests: List[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall

            def _send(self, status: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _reply(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                if length:
                    self.rfile.read(length)
                with owner._lock:
                    owner.requests.append(f"{self.command} {self.path}")
                m = _ID.match(self.path)
                if self.command == "GET" and m:
                    sid = int(m.group(1))
                    known = owner.ids.get(sid) or (owner.any_schema if sid < owner.any_id_below else None)
                    if known is not None:
                        self._send(200, {"schema": known[0], "schemaType": known[1]})
                        return
                    self._send(404, {"error_code": 40403, "message": f"Schema {sid} not found"})
                    return
                if self.command == "POST" and self.path.split("?")[0].endswith("/versions"):
                    if owner.reject_subjects:
                        self._send(409, {"error_code": 409, "message": "Schema being registered is incompatible"})
                    else:
                        self._send(200, {"id": 1})
                    return
                if "/subjects/" in self.path:
                    self._send(404, {"error_code": 40401, "message": "Subject not found"})
                    return
                self._send(404, {"error_code": 40403, "message": "Schema not found"})

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

    def count(self, prefix: str = "") -> int:
        """Requests answered so far whose request line starts with ``prefix``."""
        with self._lock:
            return sum(1 for r in self.requests if r.startswith(prefix))

    def __enter__(self) -> "CountingRegistry":
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
