"""What a compatibility check returns: the verdict, its reasons and its notes."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CompatibilityResult", "Incompatibility"]


@dataclass(frozen=True)
class Incompatibility:
    """One reason why old state cannot be restored with the new schema.

    Attributes:
        path: fully-qualified element, e.g. ``"shop.Order.amount"``.
        rule: rule identifier, one of the :class:`Rule` constants.
        detail: human readable explanation.
    """

    path: str
    rule: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path}: [{self.rule}] {self.detail}"


@dataclass
class CompatibilityResult:
    """Outcome of :func:`check_compatibility`.

    ``bool(result)`` is ``result.compatible``.  ``reasons`` lists every
    incompatibility found; ``notes`` lists accepted changes worth knowing
    about (added fields, renames, widened types, ...).
    """

    reasons: list[Incompatibility] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    message: str | None = None

    @property
    def compatible(self) -> bool:
        """True when no incompatibility was found."""
        return not self.reasons

    def __bool__(self) -> bool:
        return self.compatible

    def __str__(self) -> str:
        scope = f" (root {self.message})" if self.message else " (all messages)"
        if self.compatible:
            lines = [f"COMPATIBLE{scope}"]
        else:
            n = len(self.reasons)
            lines = [f"INCOMPATIBLE{scope}: {n} reason{'s' if n != 1 else ''}"]
            lines += [f"  - {r}" for r in self.reasons]
        if self.notes:
            lines.append("notes:")
            lines += [f"  - {n}" for n in self.notes]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable representation (used by the CLI's ``--json``)."""
        return {
            "compatible": self.compatible,
            "message": self.message,
            "reasons": [
                {"path": r.path, "rule": r.rule, "detail": r.detail} for r in self.reasons
            ],
            "notes": list(self.notes),
        }
