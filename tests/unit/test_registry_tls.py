"""tests/support/registry_tls.py: registry clients that never use TLS skip the CA bundle, and
nothing else about them changes."""

from __future__ import annotations

import ssl

import certifi
import pytest
from confluent_kafka.schema_registry import AsyncSchemaRegistryClient, Schema, SchemaRegistryClient

from tests.support.registry_tls import CLIENT_CLASSES, PATCHED


@pytest.fixture
def ca_loads(monkeypatch: pytest.MonkeyPatch) -> list:
    loads: list = []
    plain = ssl.SSLContext.load_verify_locations

    def counted(self: ssl.SSLContext, *args: object, **kwargs: object) -> None:
        loads.append((args, kwargs))
        plain(self, *args, **kwargs)

    monkeypatch.setattr(ssl.SSLContext, "load_verify_locations", counted)
    return loads


def test_both_client_classes_of_this_release_are_patched() -> None:
    # (a release that moves them makes the suite slower, not wrong: this says so)
    assert PATCHED == [name for _, name in CLIENT_CLASSES]


def test_a_mock_client_loads_no_ca_bundle_and_still_answers(ca_loads: list) -> None:
    client = SchemaRegistryClient.new_client({"url": "mock://registry-tls"})
    assert ca_loads == []
    sid = client.register_schema("t-value", Schema('{"type": "string"}', "AVRO"))
    assert client.get_schema(sid).schema_str == '{"type": "string"}'


@pytest.mark.parametrize("url", ["mock://registry-tls-async", "http://127.0.0.1:9"])
def test_an_async_client_that_never_uses_tls_loads_no_ca_bundle(ca_loads: list, url: str) -> None:
    AsyncSchemaRegistryClient.new_client({"url": url})
    assert ca_loads == []


def test_a_plain_http_client_loads_no_ca_bundle(ca_loads: list) -> None:
    SchemaRegistryClient({"url": "http://127.0.0.1:9,http://127.0.0.1:10"})
    assert ca_loads == []


@pytest.mark.parametrize("url", ["https://127.0.0.1:9", "http://127.0.0.1:9,https://127.0.0.1:10"])
def test_a_client_that_may_use_tls_is_built_as_users_build_it(ca_loads: list, url: str) -> None:
    SchemaRegistryClient({"url": url})
    assert len(ca_loads) == 1


def test_a_ca_location_given_is_loaded(ca_loads: list) -> None:
    SchemaRegistryClient.new_client({"url": "mock://registry-tls-ca", "ssl.ca.location": certifi.where()})
    assert len(ca_loads) == 1
