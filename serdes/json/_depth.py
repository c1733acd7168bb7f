"""Nesting depth of JSON values, checked before validation.

jsonschema-rs validates recursively on the native stack: a value nested a few thousand levels deep
under a recursive schema (``$ref`` to itself) overflows it and kills the process (a segfault, not
an exception), and ~1000 levels already do in a thread with a 256 KiB stack. orjson bounds what it
parses (1024 levels) and encodes (255), but a serializer validates before encoding and 1024 is too
deep for small stacks. So every value is checked against ``Limits.max_depth`` before it reaches
the validator -- when the schema can make the validator follow the value's depth: a ``$ref``
cycle (or a reference this module cannot follow), or a subschema chain at least that deep. Other
schemas bound the validator's recursion by their own depth, and their values are not walked.
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Set, Tuple
from urllib.parse import unquote

from .._errors import ValidationError

__all__ = ["exceeds_depth", "schema_needs_depth_check", "depth_error", "uses_keywords"]

_CONTAINERS = (dict, list, tuple)
_REF_KEYS = ("$ref", "$dynamicRef", "$recursiveRef")


def exceeds_depth(value: Any, limit: int) -> bool:
    """Whether ``value`` has more than ``limit`` levels of nested dicts/lists (``{}`` is 1 level).

    Level by level, without recursion; each container is visited once (a cyclic value is simply
    too deep).
    """
    containers = _CONTAINERS
    level = [value] if isinstance(value, containers) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        nxt: List[Any] = []
        for node in level:
            for child in (node.values() if isinstance(node, dict) else node):
                if isinstance(child, containers):
                    nxt.append(child)
        level = nxt
    return False


def schema_needs_depth_check(root: Any, references: Dict[str, Any], limit: int) -> bool:
    """True when validation against ``root`` (with its registry ``references``, by name) can recurse
    as deep as the value: a ``$ref`` cycle, a ``$dynamicRef``/``$recursiveRef``, a ``$ref`` this
    cannot resolve (anchors, ``$id``-relative URIs), or a longest subschema chain of ``limit`` or more.

    Schemas whose ``$ref`` only point at ``#/...`` definitions or reference names without cycles
    (most real schemas) validate no deeper than that chain, so their values need no check.
    """
    docs: Dict[str, Any] = {"": root, **references}

    def target(ref: Any, doc: str) -> Optional[Tuple[Any, str]]:
        if not isinstance(ref, str):
            return None
        base, _, fragment = ref.partition("#")
        if base:
            if base not in docs:
                return None
            doc = base
        node = docs[doc]
        if fragment and not fragment.startswith("/"):
            return None  # an anchor
        for token in fragment.split("/")[1:] if fragment else []:
            token = unquote(token).replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and token in node:
                node = node[token]
            elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
                node = node[int(token)]
            else:
                return None
        return node, doc

    def children(node: Any, doc: str) -> Optional[List[Tuple[Any, str]]]:
        out: List[Tuple[Any, str]] = []
        pending = [node]
        while pending:
            cur = pending.pop()
            items = cur.items() if isinstance(cur, dict) else enumerate(cur)
            for k, v in items:
                if cur is node and isinstance(cur, dict) and k in ("$dynamicRef", "$recursiveRef"):
                    return None
                if isinstance(v, dict):
                    out.append((v, doc))
                elif isinstance(v, list):
                    pending.append(v)
        if isinstance(node, dict) and "$ref" in node:
            t = target(node["$ref"], doc)
            if t is None:
                return None
            out.append(t)
        return out

    # iterative DFS: longest chain of schema objects, with cycle detection
    longest: Dict[int, int] = {}
    on_path: Set[int] = set()  # ids of the schema objects on the DFS path
    for start in [(d, name) for name, d in docs.items()]:
        if not isinstance(start[0], dict) or id(start[0]) in longest:
            continue
        stack: List[Tuple[Any, str, Optional[List[Tuple[Any, str]]], int]] = []
        kids = children(*start)
        if kids is None:
            return True
        stack.append((start[0], start[1], kids, 0))
        on_path.add(id(start[0]))
        while stack:
            node, doc, kids, best = stack[-1]
            if kids:
                child, cdoc = kids.pop()
                cid = id(child)
                if cid in on_path:
                    return True  # a $ref cycle
                if cid in longest:
                    stack[-1] = (node, doc, kids, max(best, longest[cid]))
                    continue
                ck = children(child, cdoc)
                if ck is None:
                    return True
                on_path.add(cid)
                stack.append((child, cdoc, ck, 0))
                if len(stack) >= limit:
                    return True
                continue
            stack.pop()
            on_path.discard(id(node))
            longest[id(node)] = best + 1
            if best + 1 >= limit:
                return True
            if stack:
                pnode, pdoc, pkids, pbest = stack[-1]
                stack[-1] = (pnode, pdoc, pkids, max(pbest, best + 1))
    return False


def uses_keywords(schemas: Iterable[Any], keywords: Iterable[str]) -> bool:
    """Whether every one of ``keywords`` is a key somewhere in ``schemas`` (iterative walk)."""
    wanted = set(keywords)
    found: Set[str] = set()
    level = list(schemas)
    while level and found != wanted:
        nxt: List[Any] = []
        for node in level:
            if isinstance(node, dict):
                found.update(wanted.intersection(node))
                nxt.extend(v for v in node.values() if isinstance(v, _CONTAINERS))
            elif isinstance(node, (list, tuple)):
                nxt.extend(v for v in node if isinstance(v, _CONTAINERS))
        level = nxt
    return found == wanted


def depth_error(limit: int) -> ValidationError:
    err = ValidationError(
        f"JSON value is nested deeper than serdes.max.depth={limit} levels; refusing to validate it"
    )
    err.json_path = "$"  # type: ignore[attr-defined]
    err.schema_path = ""  # type: ignore[attr-defined]
    return err
