"""Registry clients on plain-HTTP and ``mock://`` URLs without the TLS set-up they never use.

confluent-kafka's ``SchemaRegistryClient`` (and its async twin; the ``mock://`` clients run the
same constructor) builds a TLS context and loads certifi's CA bundle into it: about 20 ms a
client on this 2-core machine. A client whose URLs are all ``mock://`` (answered from memory) or
``http://`` (the local test servers) never opens a TLS connection, so the context is never used;
the unit tests build about 4,000 such clients (a fresh mock registry per case), which made that
load a fifth of the unit tests' time.

This plugin (loaded for the whole suite by tests/conftest.py) gives such a client
``ssl.ca.location: False`` when its configuration does not set ``ssl.ca.location`` itself:
confluent-kafka's own option for a TLS context without CA loading. Nothing else about the client
changes, and a client with an ``https://`` URL is built as users build it. Where a release lays
its client classes out otherwise, nothing is patched: the tests only run slower.
"""

from __future__ import annotations

import functools
import importlib
from typing import Any, Callable, Dict, List

#: (module, class) of confluent-kafka's registry clients
CLIENT_CLASSES = (
    ("confluent_kafka.schema_registry._sync.schema_registry_client", "SchemaRegistryClient"),
    ("confluent_kafka.schema_registry._async.schema_registry_client", "AsyncSchemaRegistryClient"),
)


def never_tls(conf: Dict[str, Any]) -> bool:
    """Whether every URL of a client configuration is ``mock://`` or ``http://``."""
    url = conf.get("url")
    return isinstance(url, str) and all(
        u.strip().startswith(("mock://", "http://")) for u in url.split(","))


def _without_ca_loading(init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(init)
    def __init__(self: Any, conf: Dict[str, Any], *args: Any, **kwargs: Any) -> None:
        if isinstance(conf, dict) and "ssl.ca.location" not in conf and never_tls(conf):
            conf = {**conf, "ssl.ca.location": False}
        init(self, conf, *args, **kwargs)

    __init__.__serdes_tests_no_ca__ = True  # type: ignore[attr-defined]
    return __init__


def patch_clients() -> List[str]:
    """Patch the client classes found; return the names of those patched."""
    patched = []
    for module_name, class_name in CLIENT_CLASSES:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        if not getattr(cls.__init__, "__serdes_tests_no_ca__", False):
            cls.__init__ = _without_ca_loading(cls.__init__)
        patched.append(class_name)
    return patched


PATCHED = patch_clients()
