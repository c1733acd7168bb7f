"""The one small JSON-over-HTTP client of serdes.testing (registry config, Flink REST, health checks).

Standard library only: serdes.testing must run before anything else is installed or started.
"""

from __future__ import annotations

import json
import urllib.request
from typing import Any

__all__ = ["http_json", "http_ok"]

JSON = "application/json"
#: the Confluent Schema Registry API's media type (Apicurio's ccompat API and cp-schema-registry)
REGISTRY_JSON = "application/vnd.schemaregistry.v1+json"


def http_json(url: str, method: str = "GET", body: object | None = None, *, timeout: float = 10,
              content_type: str = JSON) -> Any:
    """Send ``body`` as JSON, return the decoded JSON answer (``None`` for an empty one).

    HTTP errors raise :class:`urllib.error.HTTPError`, connection problems :class:`OSError`."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", content_type)
    req.add_header("Accept", JSON)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        raw = resp.read()
    return json.loads(raw) if raw else None


def http_ok(url: str, timeout: float = 3) -> bool:
    """True when a GET of ``url`` answers 200 (a readiness probe; errors propagate)."""
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        return bool(resp.status == 200)
