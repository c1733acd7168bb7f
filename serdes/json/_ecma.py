r"""A JSON Schema pattern as jsonschema-rs reads it, written for Python's ``regex`` module.

Used when a pattern jsonschema-rs accepts has to run in the Python fallback instead (it compiles
to more than ``serdes.regex.size.limit``: :mod:`serdes.json._patterns`), so that the verdicts stay
jsonschema-rs'. jsonschema-rs reads ECMA-262 as: ``\d`` and ``\w`` ASCII, ``\s`` ECMA's white
space and line terminators, ``.`` any character but a line terminator, ``$`` the end of the input
only, ``\b`` a Unicode word boundary (the regex crate's). Python's readings differ in each, so each
is written out; the rest (literals, classes, groups, quantifiers, lookaround, backreferences,
``\p{..}``) means the same in both.

What this does not know how to say exactly (inline flags, nested classes or set operations,
``\D``/``\W``/``\S`` inside a class, unknown escapes) raises :class:`Untranslatable`: refused,
never guessed.
"""

from __future__ import annotations

import re

__all__ = ["Untranslatable", "to_python"]


class Untranslatable(ValueError):
    """The pattern uses a construct whose jsonschema-rs reading this module cannot write exactly."""


# ECMA-262 WhiteSpace and LineTerminator (what jsonschema-rs' \s matches, all 25 of them)
_WS = r"\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
_WORD = "A-Za-z0-9_"
_IN_CLASS = {"d": "0-9", "w": _WORD, "s": _WS}
_OUTSIDE = {
    "d": "[0-9]", "D": "[^0-9]", "w": f"[{_WORD}]", "W": f"[^{_WORD}]", "s": f"[{_WS}]", "S": f"[^{_WS}]",
}
# the regex crate's Unicode word character (\b is a boundary between it and anything else)
_UWORD = r"[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]"
_BOUNDARY = {"b": f"(?:(?<={_UWORD})(?!{_UWORD})|(?<!{_UWORD})(?={_UWORD}))",
             "B": f"(?:(?<={_UWORD})(?={_UWORD})|(?<!{_UWORD})(?!{_UWORD}))"}
_SAME = set("tnrfv")
_QUANTIFIER = re.compile(r"\{\d+(?:,\d*)?\}")
_HEX2 = re.compile(r"[0-9A-Fa-f]{2}")
_HEX4 = re.compile(r"[0-9A-Fa-f]{4}")
_BRACED_HEX = re.compile(r"\{([0-9A-Fa-f]{1,6})\}")
_PROPERTY = re.compile(r"\{[A-Za-z0-9_=. -]+\}")
_NAME = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
_GROUP_OPENINGS = ("?:", "?=", "?!", "?<=", "?<!", "?>")


def to_python(pattern: str) -> str:
    """``pattern`` (one jsonschema-rs compiles) in ``regex`` module syntax with jsonschema-rs' reading."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n:
                raise Untranslatable("a trailing backslash")
            text, i = _escape(pattern, i + 1, in_class)
            out.append(text)
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c == "[" or pattern.startswith(("&&", "--", "~~"), i):
                raise Untranslatable(f"{pattern[i:i + 2]!r} inside a character class (nested classes, set operations)")
            out.append(c)
            i += 1
            continue
        if c == "[":
            start = i + 2 if pattern.startswith("[^", i) else i + 1
            if start < n and pattern[start] == "]":
                raise Untranslatable("a character class opened with ']'")
            out.append(pattern[i:start])
            in_class, i = True, start
            continue
        if c == ".":
            out.append(r"[^\n\r\u2028\u2029]")
        elif c == "$":
            out.append(r"\Z")
        elif c == "{":
            m = _QUANTIFIER.match(pattern, i)
            if m is None:
                out.append(r"\{")
            else:
                out.append(m.group())
                i = m.end()
                continue
        elif c == "}":
            out.append(r"\}")
        elif c == "(" and pattern.startswith("(?", i):
            at = i + 3 if pattern.startswith("(?P<", i) else i + 2
            name = _NAME.match(pattern, at)
            if name is not None:  # a named group, (?<name>...) or (?P<name>...)
                out.append(f"(?P<{name.group(1)}>")
                i = name.end()
                continue
            opening = next((o for o in _GROUP_OPENINGS if pattern.startswith(o, i + 1)), None)
            if opening is None:
                raise Untranslatable(f"the group {pattern[i:i + 4]!r} (inline flags)")
            out.append("(" + opening)
            i += 1 + len(opening)
            continue
        else:
            out.append(c)
        i += 1
    if in_class:
        raise Untranslatable("an unterminated character class")
    return "".join(out)


def _escape(pattern: str, i: int, in_class: bool) -> tuple[str, int]:
    """The escape at ``pattern[i]`` (after the backslash) and the index after it."""
    c = pattern[i]
    if c in _IN_CLASS and in_class:
        return _IN_CLASS[c], i + 1
    if c in _OUTSIDE:
        if in_class:
            raise Untranslatable(f"\\{c} inside a character class")
        return _OUTSIDE[c], i + 1
    if c in "bB":
        return (r"\x08", i + 1) if in_class and c == "b" else (_boundary(c, in_class), i + 1)
    if c in _SAME:
        return "\\" + c, i + 1
    if c == "x" and _HEX2.match(pattern, i + 1):
        return pattern[i - 1:i + 3], i + 3
    if c == "u":
        m = _BRACED_HEX.match(pattern, i + 1)
        if m is not None:
            return f"\\U{int(m.group(1), 16):08X}", m.end()
        if _HEX4.match(pattern, i + 1):
            return pattern[i - 1:i + 5], i + 5
    if c == "c" and i + 1 < len(pattern) and pattern[i + 1].isascii() and pattern[i + 1].isalpha():
        return f"\\x{ord(pattern[i + 1]) % 32:02x}", i + 2
    if c in "pP":
        m = _PROPERTY.match(pattern, i + 1)
        if m is not None:
            return "\\" + c + m.group(), m.end()
    if c in "123456789" and not in_class and not (i + 1 < len(pattern) and pattern[i + 1].isdigit()):
        return "\\" + c, i + 1
    if c == "k" and not in_class:
        m = _NAME.match(pattern, i + 1)
        if m is not None:
            return f"(?P={m.group(1)})", m.end()
    if c == "A" and not in_class:
        return r"\A", i + 1
    if c == "z" and not in_class:
        return r"\Z", i + 1
    if not c.isalnum():  # an identity escape: the character itself, in both
        return "\\" + c, i + 1
    raise Untranslatable(f"the escape \\{c}")


def _boundary(c: str, in_class: bool) -> str:
    if in_class:
        raise Untranslatable(f"\\{c} inside a character class")
    return _BOUNDARY[c]
