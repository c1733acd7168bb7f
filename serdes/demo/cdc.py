"""The CDC demo: ``python -m serdes.demo.cdc`` (``bash scripts/demo.sh --cdc``).

Starts, as local processes, a Kafka broker, the Apicurio registry, PostgreSQL with logical decoding
and Kafka Connect with Debezium's PostgreSQL connector (Apicurio's Avro converter writing the
Confluent wire format); creates an ``accounts`` table with a few rows, starts the connector (the
snapshot), then inserts, updates and deletes while it streams. ``serdes.cdc`` reads the topic
(``ChangeParser`` with ``SemanticTypes``: numerics as ``Decimal``, timestamps as ``datetime``) and
materializes the table from the changes; the demo prints it next to ``SELECT *`` and says whether
they are equal. Everything is fetched into ``~/.cache/serdes`` on first use
(``python -m serdes.testing fetch --cdc``) and stopped at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import time
import uuid
from decimal import Decimal
from typing import Any, Dict, List, Optional, Sequence, Tuple

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient

from serdes.avro import AvroDeserializer
from serdes.cdc import UNAVAILABLE, Change, ChangeParser, Op, SemanticTypes

__all__ = ["main"]

_TABLE = "accounts"
_COLUMNS = ["id", "owner", "balance", "active", "opened"]
_SNAPSHOT = [
    "INSERT INTO accounts VALUES (1, 'ada', 120.50, true, '2024-01-05 10:00:00+00'),"
    " (2, 'grace', 80.00, true, '2024-02-11 09:30:00+00'), (3, 'alan', 5.25, false, '2024-03-01 12:00:00+00')",
]
_STREAMING = [
    "UPDATE accounts SET balance = balance + 30 WHERE id = 1",
    "INSERT INTO accounts VALUES (4, 'edsger', 999.99, true, '2024-04-01 08:00:00+00')",
    "DELETE FROM accounts WHERE id = 3",
    "UPDATE accounts SET owner = 'grace h.', active = false WHERE id = 2",
]


def _log(msg: str) -> None:
    print(f"[cdc-demo] {msg}", flush=True)


def _materialize(changes: List[Change]) -> Dict[int, Dict[str, Any]]:
    table: Dict[int, Dict[str, Any]] = {}
    for ch in changes:
        if ch.op is Op.TRUNCATE:
            table.clear()
        elif ch.op is Op.DELETE and ch.before is not None:
            table.pop(ch.before["id"], None)
        elif ch.after is not None:
            old = table.get(ch.after["id"], {})
            table[ch.after["id"]] = {c: old.get(c) if v is UNAVAILABLE else v for c, v in ch.after.items()}
    return table


def _as_psql(v: Any) -> str:
    """A value as ``psql -A -t`` prints it (to compare the materialized table with SELECT *)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "t" if v else "f"
    if isinstance(v, Decimal):
        return str(v)
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        return v.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S+00")
    return str(v)


def _rows_text(rows: List[Tuple[str, ...]]) -> List[str]:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(_COLUMNS)]
    out = [" | ".join(c.ljust(w) for c, w in zip(_COLUMNS, widths, strict=True))]
    out.append("-+-".join("-" * w for w in widths))
    out += [" | ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return out


def run(timeout: float = 180.0) -> bool:
    """The whole demo; True when the materialized table equals ``SELECT *``."""
    from serdes.testing import LocalKafkaConnect, LocalPostgres, debezium_postgres_config, fetch_cdc, local_servers

    run_id = uuid.uuid4().hex[:8]
    t0 = time.monotonic()
    fetch_cdc()
    with contextlib.ExitStack() as stack:
        servers = stack.enter_context(local_servers())
        _log(f"Kafka {servers.bootstrap_servers} and Apicurio {servers.registry_url} up "
             f"({time.monotonic() - t0:.0f}s)")
        pg = stack.enter_context(LocalPostgres())
        connect = stack.enter_context(LocalKafkaConnect(servers.bootstrap_servers))
        _log(f"PostgreSQL on port {pg.port} and Kafka Connect {connect.url} up ({time.monotonic() - t0:.0f}s)")
        pg.psql("CREATE TABLE accounts (id int PRIMARY KEY, owner text, balance numeric(12,2), active boolean,"
                " opened timestamptz); ALTER TABLE accounts REPLICA IDENTITY FULL")
        for sql in _SNAPSHOT:
            pg.psql(sql)
        prefix, name = f"demo{run_id}", f"demo-pg-{run_id}"
        connect.create_connector(name, debezium_postgres_config(
            pg, [_TABLE], run_id=run_id, topic_prefix=prefix, registry_url=servers.registry_url))
        stack.callback(connect.delete_connector, name)
        connect.wait_running(name)
        topic = f"{prefix}.public.{_TABLE}"
        _log(f"Debezium connector running: snapshot of {_TABLE} -> topic {topic}")

        client = SchemaRegistryClient({"url": servers.registry_url, "timeout": 30})
        deserialize = AvroDeserializer(client)
        parser = ChangeParser(semantic_types=SemanticTypes(client))
        consumer = Consumer({"bootstrap.servers": servers.bootstrap_servers, "group.id": f"cdc-demo-{run_id}",
                             "enable.auto.commit": False})
        stack.callback(consumer.close)
        deadline = time.monotonic() + timeout
        while topic not in consumer.list_topics(timeout=5).topics:
            if time.monotonic() > deadline:
                raise RuntimeError(f"Debezium did not create {topic} in {timeout:.0f}s")
            time.sleep(0.5)
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        changes: List[Change] = []

        def consume_until(done: Any) -> None:
            while not done():
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the pipeline did not deliver the changes in {timeout:.0f}s "
                                       f"({len(changes)} so far)")
                msg = consumer.poll(0.5)
                if msg is None or msg.error():
                    continue
                change = parser.parse_message(msg, deserialize, deserialize)
                if change is not None:
                    changes.append(change)

        consume_until(lambda: len(changes) >= 3)
        _log(f"snapshot read: {len(changes)} 'r' events; now streaming {len(_STREAMING)} statements")
        for sql in _STREAMING:
            pg.psql(sql)
        consume_until(lambda: len(changes) >= 3 + len(_STREAMING))
        for ch in changes:
            row = ch.after if ch.after is not None else ch.before
            _log(f"  op {ch.op.value!r} id={row['id'] if row else None}")
        table = _materialize(changes)
        ours = [tuple(_as_psql(table[k].get(c)) for c in _COLUMNS) for k in sorted(table)]
        theirs = [tuple(line.split("|")) for line in
                  pg.psql(f"SET TimeZone = 'UTC'; SELECT {', '.join(_COLUMNS)} FROM {_TABLE} ORDER BY id").splitlines() if line]
        print("\nmaterialized from the Debezium topic by serdes.cdc:")
        print("\n".join(_rows_text(ours)))
        print("\nSELECT * FROM accounts:")
        print("\n".join(_rows_text(theirs)))
        equal = ours == theirs
        print(f"\nequal: {equal} ({len(changes)} changes, {time.monotonic() - t0:.0f}s in all)")
        return equal


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m serdes.demo.cdc", description=__doc__.splitlines()[0])
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds to wait for the changes (default 180)")
    args = ap.parse_args(argv)
    return 0 if run(args.timeout) else 1


if __name__ == "__main__":
    raise SystemExit(main())
