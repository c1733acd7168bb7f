"""``python -m serdes.testing fetch|run`` — provision local test servers."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time

from . import _maven
from ._servers import LocalKafka, LocalRegistry, LocalServers


def _fetch(args: argparse.Namespace) -> int:
    t0 = time.monotonic()
    lib, app = _maven.fetch_all()
    print(f"kafka libs:   {lib}")
    print(f"apicurio app: {app}")
    print(f"fetched in {time.monotonic() - t0:.1f}s (cache: {_maven.cache_dir()})")
    return 0


def _run(args: argparse.Namespace) -> int:
    servers = LocalServers(
        kafka=LocalKafka(port=args.kafka_port),
        registry=LocalRegistry(port=args.registry_port, persistent=not args.in_memory),
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
        print(f"export SERDES_TEST_BOOTSTRAP={servers.bootstrap_servers}")
        print(f"export SERDES_TEST_REGISTRY_URL={servers.registry_url}")
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serdes.testing", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("fetch", help="download Kafka + Apicurio Registry into the cache").set_defaults(
        func=_fetch
    )
    run = sub.add_parser("run", help="start broker + registry, print addresses, stop on Ctrl-C")
    run.add_argument("--kafka-port", type=int, default=None)
    run.add_argument("--registry-port", type=int, default=None)
    run.add_argument("--in-memory", action="store_true", help="in-memory registry storage")
    run.set_defaults(func=_run)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except _maven.MissingToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
