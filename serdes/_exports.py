"""What the packages' ``__init__`` modules share: public names that exist only with some
confluent-kafka releases.

serdes re-exports confluent-kafka's schema helpers as they are, and its builders and asyncio
consumer subclass classes that older releases lack; a package exports each such name only where
the installed confluent-kafka provides it, so ``import serdes.avro`` works on every release.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any, Collection, Iterable, List, MutableMapping

__all__ = ["reexport", "defined"]


def reexport(namespace: MutableMapping[str, Any], module: ModuleType, names: Iterable[str]) -> None:
    """Bind in ``namespace`` (a package's ``globals()``) each of ``names`` that ``module`` has."""
    for name in names:
        if hasattr(module, name):
            namespace[name] = getattr(module, name)


def defined(namespace: MutableMapping[str, Any], names: Iterable[str], lazy: Collection[str] = ()) -> List[str]:
    """A package's ``__all__``: ``names`` it defines with the installed confluent-kafka, in order
    (``lazy`` ones, provided by the package's ``__getattr__`` on first use, always)."""
    return [name for name in names if name in namespace or name in lazy]
