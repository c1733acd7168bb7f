"""Asyncio serdes: serdes' sync serde driven by an ``AsyncSchemaRegistryClient``.

An async serde (``AsyncAvroSerializer`` and friends) subclasses confluent-kafka's async class, so
construction, configuration keys and ``await ser(obj, ctx)`` are as there. Inside it holds an
*engine*: an instance of serdes' sync class of the same format, built with the same arguments,
whose registry is :class:`AsyncRegistryView` -- a synchronous face of the async client that only
answers calls it already has the answer to. The engine's caches (one decoder per writer schema,
one encoder per topic and field) are therefore the sync class's, filled by the sync class's own
miss code; nothing is copied.

* **Cache hit** (every record after the first of a schema): the coroutine calls the engine, which
  decodes or encodes synchronously. Nothing is awaited.
* **Cache miss**: the engine's miss path calls the registry view, which raises
  :class:`_NeedsRegistry` naming the call it needs. The driver awaits that call on the async
  client (the miss is a :mod:`serdes._drive` plan, the consumers' design), stores the answer
  (or the error) and runs the engine step again, which now gets one
  answer further; a miss that needs *n* registry calls runs the step *n + 1* times. Registry
  errors are replayed to the engine as raised, so the sync code's error mapping applies and the
  async classes raise the same typed errors as the sync ones.

Answers live only while a miss is being resolved (they are dropped when the last concurrent miss
of that serde finishes): the registry client's own caches and TTLs stay the source of truth, and
the view never serves a stale ``latest`` version to a later miss.
"""

from __future__ import annotations

import inspect
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple, TypeVar

from confluent_kafka.serialization import SerializationContext

from ._cache import bounded_store
from ._confluent import FEATURE_SINCE, require_release
from ._drive import Plan, drive_async
from ._errors import RegistryUnavailableError

if TYPE_CHECKING:  # _serde's classes are the engines; only their types are needed here
    from ._serde import FastSerializer

__all__ = ["AsyncRegistryView", "AsyncSerdeMixin", "resolve"]

T = TypeVar("T")

# Registry calls one engine step may need before it completes: the writer schema, its references
# (transitively), a reader schema and its references, associations. A schema whose reference
# graph needs more is refused rather than looped on.
MAX_REGISTRY_CALLS = 512
# Answers held while misses overlap (dropped when the last one finishes): bounded, the oldest
# dropped first, so that misses that never stop overlapping cannot grow them without end. Far
# above what one miss needs (MAX_REGISTRY_CALLS), so a miss never loses its own answers.
_MAX_ANSWERS = 16 * MAX_REGISTRY_CALLS


class _NeedsRegistry(BaseException):
    """The engine needs a registry answer the view does not have yet.

    A ``BaseException`` on purpose: the sync code between the view and the driver catches
    ``Exception`` to type errors, and this is not an error, it is a request to suspend.
    """

    def __init__(self, key: Tuple[str, str], call: Callable[[], Any]) -> None:
        super().__init__(key[0])
        self.key = key
        self.call = call  # returns the awaitable (or value) the driver waits for


class AsyncRegistryView:
    """A synchronous ``SchemaRegistryClient`` face over an ``AsyncSchemaRegistryClient``.

    Coroutine methods of the client become sync methods answered from this view's answers; an
    unanswered call raises :class:`_NeedsRegistry` for :func:`resolve` to await. Every other
    attribute (``config()``, ...) is the client's.
    """

    def __init__(self, client: Any) -> None:
        self.client = client
        self._answers: Dict[Tuple[str, str], Tuple[bool, Any]] = {}
        self._misses_in_flight = 0

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self.client, name)
        if not callable(attr):
            return attr
        coroutine_function = inspect.iscoroutinefunction(attr)
        answers = self._answers

        def answered(*args: Any, **kwargs: Any) -> Any:
            key = (name, repr((args, sorted(kwargs.items()))))
            found = answers.get(key)
            if found is None:
                if not coroutine_function:
                    # a plain method (config(), ...) or a wrapper around a coroutine method: only
                    # an awaitable result needs the driver
                    out = attr(*args, **kwargs)
                    if not inspect.isawaitable(out):
                        return out
                    if inspect.iscoroutine(out):
                        out.close()
                raise _NeedsRegistry(key, lambda: getattr(self.client, name)(*args, **kwargs))
            return _replay(found)

        return answered

    def answer(self, key: Tuple[str, str], call: Callable[[], Any]) -> Any:
        """The answer of an awaitable ``call`` (e.g. a cluster-id resolver), once the driver has it."""
        found = self._answers.get(key)
        if found is None:
            raise _NeedsRegistry(key, call)
        return _replay(found)

    def remember(self, key: Tuple[str, str], reply: Tuple[bool, Any]) -> None:
        """Keep a registry answer (or its error, replayed to the engine, which types it as the sync
        path does) while misses are in flight."""
        bounded_store(self._answers, key, reply, _MAX_ANSWERS)


def _replay(found: Tuple[bool, Any]) -> Any:
    ok, value = found
    if ok:
        return value
    raise value


async def resolve(view: Optional[AsyncRegistryView], step: Callable[..., T], *args: Any) -> T:
    """Run a sync engine step, awaiting on ``view``'s client every registry call it asks for."""
    if view is None:
        return step(*args)
    view._misses_in_flight += 1
    try:
        return await drive_async(_miss_plan(view, step, args))
    finally:
        view._misses_in_flight -= 1
        if view._misses_in_flight == 0:
            view._answers.clear()


def _miss_plan(view: AsyncRegistryView, step: Callable[..., T], args: Tuple[Any, ...]) -> Plan[T]:
    """A registry miss as a :mod:`serdes._drive` plan: run the step; each registry call it raises
    :class:`_NeedsRegistry` for is yielded to the driver (which awaits it) and its answer stored
    for the next run of the step."""
    for _ in range(MAX_REGISTRY_CALLS):
        try:
            return step(*args)
        except _NeedsRegistry as need:
            view.remember(need.key, (yield need.call, ()))
    raise RegistryUnavailableError(
        f"more than {MAX_REGISTRY_CALLS} registry calls for one record (reference graph too large)"
    )


def _distinct_heads(items: List[Any]) -> List[Any]:
    """The first item of each distinct (topic, first 21 payload bytes) -- the frame's magic byte
    and schema id or GUID, and Protobuf's first message indexes -- framed bytes or messages."""
    seen = set()
    out = []
    for item in items:
        if item is None or isinstance(item, (bytes, bytearray, memoryview)):
            key: Any = (None, None if item is None else bytes(item[:21]))
        else:
            value = item.value()
            key = (item.topic(), None if value is None else bytes(value[:21]))
        if key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _parameters(cls: type) -> List[str]:
    """Names of ``cls.__init__``'s parameters (through serdes' ``*args, **kwargs`` forwarding)."""
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = [p for p in inspect.signature(init).parameters.values() if p.name != "self"]
        if any(p.kind is p.VAR_POSITIONAL for p in params):
            continue
        return [p.name for p in params]
    raise TypeError(f"cannot read the constructor of {cls.__name__}")  # pragma: no cover


class AsyncSerdeMixin:
    """Shared construction and driving of an async serde over a sync serdes engine.

    Subclasses set ``_engine_class`` (serdes' sync class) and put confluent-kafka's async class
    after this mixin in their bases.
    """

    _engine_class: type
    _engine: Any
    _view: Optional[AsyncRegistryView]

    async def __init__(self, *args: Any, **kwargs: Any) -> None:  # type: ignore[misc]
        names = _parameters(self._engine_class)
        if len(args) > len(names):
            raise TypeError(f"{type(self).__name__}() takes at most {len(names)} positional arguments")
        bound: Dict[str, Any] = dict(zip(names, args, strict=False))  # len(args) checked above
        for k, v in kwargs.items():
            if k in bound:
                raise TypeError(f"{type(self).__name__}() got multiple values for argument {k!r}")
            bound[k] = v
        client = bound.get("schema_registry_client")
        confluent_names = set(_parameters(_confluent_async_base(type(self))))
        confluent_kwargs = self._confluent_kwargs({k: v for k, v in bound.items() if k in confluent_names})
        await super().__init__(**confluent_kwargs)  # type: ignore[misc]
        self._view = AsyncRegistryView(client) if client is not None else None
        engine_kwargs = dict(bound)
        if "schema_registry_client" in engine_kwargs or client is not None:
            engine_kwargs["schema_registry_client"] = self._view
        self._engine = await resolve(self._view, lambda: self._engine_class(**engine_kwargs))

    def set_async_cluster_id_resolver(self, resolver: Callable[[], Any]) -> None:
        """As confluent-kafka's (``AsyncDeserializingConsumer`` / ``AsyncSerializingProducer`` call
        it): the associated subject name strategy's cluster id, for the engine's strategy too.
        confluent-kafka 2.16+ (:class:`serdes.ConfluentVersionError` on an older release)."""
        require_release("set_async_cluster_id_resolver", FEATURE_SINCE["cluster id resolver"])
        super().set_async_cluster_id_resolver(resolver)  # type: ignore[misc]
        view = self._view
        if view is not None:
            self._engine.set_cluster_id_resolver(lambda: view.answer(("<cluster id>", ""), resolver))

    def _confluent_kwargs(self, kwargs: Dict[str, Any]) -> Dict[str, Any]:
        """Arguments for confluent-kafka's async constructor (a hook for placeholders)."""
        return kwargs

    def clear_cache(self) -> None:
        """Forget every cached decoder/encoder (the registry client's caches are left alone)."""
        self._engine.clear_cache()


def _confluent_async_base(cls: type) -> type:
    for klass in cls.__mro__:
        if klass.__module__.startswith("confluent_kafka.") and "__init__" in klass.__dict__:
            return klass
    raise TypeError(f"{cls.__name__} has no confluent-kafka base")  # pragma: no cover


class AsyncSerializerMixin(AsyncSerdeMixin):
    """``await ser(obj, ctx)``: the engine's cached encoder on a hit, registry awaits on a miss."""

    _engine: FastSerializer

    async def __call__(self, obj: Any, ctx: Optional[SerializationContext] = None) -> Optional[bytes]:
        try:
            return self._engine(obj, ctx)
        except _NeedsRegistry:
            return await resolve(self._view, self._engine, obj, ctx)

    async def serialize_batch(self, objs: Any, ctx: Optional[SerializationContext] = None) -> List[Optional[bytes]]:
        """Encode a list of values for one ``(topic, field)``."""
        engine = self._engine
        out: List[Optional[bytes]] = []
        for obj in objs:
            try:
                out.append(engine(obj, ctx))
            except _NeedsRegistry:
                out.append(await resolve(self._view, engine, obj, ctx))
        return out


class AsyncDeserializerMixin(AsyncSerdeMixin):
    """``await deser(data, ctx)``: the engine's cached decoder on a hit, registry awaits on a miss."""

    async def __call__(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        try:
            return self._engine(data, ctx)
        except _NeedsRegistry:
            return await resolve(self._view, self._engine, data, ctx)

    async def deserialize_batch(self, payloads: Any, ctx: Optional[SerializationContext] = None) -> List[Any]:
        """Decode a list of framed records that share one context (topic, field, no per-record headers)."""
        engine = self._engine
        out: List[Any] = []
        for p in payloads:
            try:
                out.append(engine(p, ctx))
            except _NeedsRegistry:
                out.append(await resolve(self._view, engine, p, ctx))
        return out

    async def deserialize_arrow(self, frames: Any, ctx: Optional[SerializationContext] = None, **options: Any) -> Any:
        """The sync class's :meth:`deserialize_arrow` (same arguments, the same
        :class:`~serdes.arrow.ArrowBatch`; docs/arrow.md); the registry is awaited only for the
        schemas the engine has not seen."""
        items = list(frames)
        engine = self._engine

        def step() -> Any:
            # one record per distinct frame head first, so that each registry answer the batch
            # needs is asked for while re-running only those few records (the answers stay for
            # the whole batch's run, which then needs no more): work linear in the batch
            heads = _distinct_heads(items)
            if len(heads) < len(items):
                try:
                    engine.deserialize_arrow(heads, ctx, **dict(options, errors="collect"))
                except (ValueError, TypeError):
                    pass  # the whole batch's call below raises it, with every record in view
            return engine.deserialize_arrow(items, ctx, **options)

        try:
            return engine.deserialize_arrow(items, ctx, **options)
        except _NeedsRegistry:
            return await resolve(self._view, step)

    async def deserialize_with_schema(self, data: Optional[bytes], ctx: Optional[SerializationContext] = None) -> Any:
        """``(value, WriterSchema)`` as the sync class's :meth:`deserialize_with_schema`; the
        registry is awaited only the first time a schema is seen."""
        engine = self._engine
        try:
            return engine.deserialize_with_schema(data, ctx)
        except _NeedsRegistry:
            return await resolve(self._view, engine.deserialize_with_schema, data, ctx)

    async def deserialize_batch_with_schema(self, payloads: Any, ctx: Optional[SerializationContext] = None) -> List[Any]:
        """:meth:`deserialize_batch` with each value's writer schema: ``(value, WriterSchema)`` pairs."""
        out: List[Any] = []
        for p in payloads:
            out.append(await self.deserialize_with_schema(p, ctx))
        return out
