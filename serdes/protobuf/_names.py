"""Schema reference names (Protobuf import paths) checked before they are used as names anywhere.

A reference name comes from the registry: whoever registered the schema chose it. serdes never
uses one as a file path (see :mod:`serdes.protobuf._proto_text`), but a name that *looks* like a
path outside its tree is refused anyway, so no later change (or tool the descriptors are handed
to, e.g. ``protoc --descriptor_set_in``) can turn it into one.
"""

from __future__ import annotations

import re
from typing import Any, Optional

from .._errors import RecordLocation, SchemaMismatchError

__all__ = ["check_import_name", "MAX_NAME_LENGTH"]

#: longer names are refused (real import paths are a few dozen characters)
MAX_NAME_LENGTH = 1024

_DRIVE = re.compile(r"^[A-Za-z]:")


def _problem(name: Any) -> Optional[str]:
    if not isinstance(name, str):
        return f"is a {type(name).__name__}, not a string"
    if not name:
        return "is empty"
    if len(name) > MAX_NAME_LENGTH:
        return f"is longer than {MAX_NAME_LENGTH} characters"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in name):
        return "contains a NUL or another control character"
    if "\\" in name:
        return "contains a backslash"
    if name.startswith("/") or _DRIVE.match(name):
        return "is an absolute path"
    if any(seg in ("", ".", "..") for seg in name.split("/")):
        return "has an empty, '.' or '..' path segment"
    return None


def check_import_name(
    name: Any, what: str = "schema reference", location: Optional[RecordLocation] = None, schema_id: Any = None
) -> str:
    """``name`` if it is a relative import path of plain segments, else a :class:`SchemaMismatchError`
    naming it (``..`` segments, absolute or drive paths, backslashes, NULs/control characters, empty
    segments, over-long names)."""
    problem = _problem(name)
    if problem is not None:
        raise SchemaMismatchError(f"{what} name {name!r} {problem}; refusing it", location, schema_id)
    checked: str = name  # _problem found it a str
    return checked
