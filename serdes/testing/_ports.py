"""Free TCP ports on 127.0.0.1 for the local servers (every server binds there, never 0.0.0.0)."""

from __future__ import annotations

import socket
import time
from typing import Collection

__all__ = ["free_port", "free_ports", "port_free", "wait_port_free"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def free_ports(count: int, avoid: Collection[int] = ()) -> list[int]:
    """``count`` distinct free ports, none of them in ``avoid`` (a server's listener plus its
    controller / REST / RPC ports)."""
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports and port not in avoid:
            ports.append(port)
    return ports


def port_free(port: int) -> bool:
    """True when a listener could bind ``port`` on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        # like the JVM's server sockets: TIME_WAIT leftovers do not block a listener
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def wait_port_free(port: int, timeout: float) -> bool:
    """Wait up to ``timeout`` seconds for ``port`` to be free (a restart on the same port while
    the stopped process's socket is still closing); True when it is."""
    deadline = time.monotonic() + timeout
    while not port_free(port):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True
