"""``python -m serdes.protobuf.compat OLD.desc NEW.desc [--message pkg.Msg] [--json]``.

Exit codes: ``0`` compatible, ``1`` incompatible, ``2`` usage error (or a file that is not a
FileDescriptorSet). ``__main__`` runs :func:`main`; it lives here so that importing
:mod:`serdes.protobuf.compat` never imports the package's ``__main__`` module.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from .._descriptor_sets import load_descriptor_set
from ._checker import check_compatibility

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m serdes.protobuf.compat",
        description=(
            "Check that protobuf state written with OLD descriptors can be restored "
            "with NEW descriptors. Exit 0 compatible, 1 incompatible, 2 usage error."
        ),
    )
    p.add_argument("old", help="FileDescriptorSet the state was written with (protoc --include_imports -o)")
    p.add_argument("new", help="FileDescriptorSet of the new schema")
    p.add_argument("--message", "-m", help="fully-qualified root message type held in state")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point; returns the process exit code."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse usage errors / --help
        return exc.code if isinstance(exc.code, int) else 2
    try:
        old = load_descriptor_set(args.old)
        new = load_descriptor_set(args.new)
        result = check_compatibility(old, new, args.message)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(result)
    return 0 if result.compatible else 1
