"""``python -m serdes.codegen``: a schema file or a registered schema -> a Python module of classes.

Exit codes: 0 done; 2 bad input (arguments, an unreadable file, a schema the generator refuses); 1
the registry failed (unreachable, refused, an answer that is not a registry's).
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any, Callable, Dict, List, Optional

from .._errors import RegistryError, SerdesError
from . import STYLES, generate, generate_from_registry
from ._emit import DEFAULT_CODEGEN_LIMITS

_KINDS = {"avro": "AVRO", "protobuf": "PROTOBUF", "jsonschema": "JSON"}


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m serdes.codegen",
        description="Generate typed classes (dataclasses or msgspec.Struct) from an Avro, Protobuf or JSON schema.",
    )
    sub = p.add_subparsers(dest="kind", required=True, metavar="{avro,protobuf,jsonschema,registry}")

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--style", choices=STYLES, default="dataclass",
                        help="dataclasses.dataclass or msgspec.Struct classes (default: dataclass)")
        sp.add_argument("-o", "--output", metavar="OUT.py", help="write the module to this file (default: stdout)")

    for kind, what in (("avro", "an Avro schema (.avsc)"), ("protobuf", "a .proto file"),
                       ("jsonschema", "a JSON Schema (.json)")):
        sp = sub.add_parser(kind, help=f"classes from {what}")
        sp.add_argument("file", metavar="FILE", help=f"{what}, '-' for stdin (no default: required)")
        sp.add_argument("--ref", action="append", default=[], metavar="NAME=FILE",
                        help="a schema the file refers to: NAME as the schema names it (Avro: a type's full name; "
                             "Protobuf: an import path; JSON Schema: a $ref target), FILE where it is; "
                             "repeatable (default: none)")
        common(sp)
    sp = sub.add_parser("registry", help="classes from a registered schema (its schemaType picks the generator)")
    sp.add_argument("--url", required=True, help="the Schema Registry's URL (no default: required)")
    sp.add_argument("--subject", required=True, help="the subject (no default: required)")
    sp.add_argument("--version", default="latest", help="a version number or 'latest' (default: latest)")
    sp.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a SchemaRegistryClient setting, e.g. basic.auth.user.info=user:secret; repeatable "
                         "(default: none)")
    common(sp)
    return p


def main(argv: Optional[List[str]] = None, client_factory: Optional[Callable[[str], Any]] = None) -> int:
    """The command line; ``client_factory(url)`` makes the registry client (default: confluent-kafka's
    ``SchemaRegistryClient``). Returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.kind == "registry":
            version: Any = args.version
            if version != "latest":
                try:
                    version = int(version)
                except ValueError:
                    return _fail(f"--version must be a number or 'latest', not {version!r}", 2)
            if client_factory is None:
                conf: Dict[str, Any] = {"timeout": 30}
                for item in args.conf:
                    key, sep, value = item.partition("=")
                    if not sep or not key:
                        return _fail(f"--conf takes KEY=VALUE, not {item!r}", 2)
                    conf[key] = _conf_value(value)
                client_factory = functools.partial(_client, conf)

            try:
                client = client_factory(args.url)
            except (TypeError, ValueError) as e:  # confluent-kafka's checks of the client settings
                return _fail(f"registry client settings: {e}", 2)
            source = generate_from_registry(client, args.subject, version, args.style)
        else:
            try:
                # one character past the bound is enough for generate() to refuse an oversized file
                most = DEFAULT_CODEGEN_LIMITS.max_schema_chars + 1
                text = sys.stdin.read(most) if args.file == "-" else _read(args.file, most)
                refs: Dict[str, str] = {}
                for item in args.ref:
                    name, sep, path = item.partition("=")
                    if not sep or not name or not path:
                        return _fail(f"--ref takes NAME=FILE, not {item!r}", 2)
                    refs[name] = _read(path, most)
            except (OSError, UnicodeDecodeError) as e:
                return _fail(f"cannot read {getattr(e, 'filename', None) or args.file}: {e}", 2)
            source = generate(text, _KINDS[args.kind], args.style, references=refs)
    except RegistryError as e:
        return _fail(f"registry error: {e.reason}", 1)
    except SerdesError as e:
        return _fail(e.reason, 2)
    except ValueError as e:
        return _fail(str(e), 2)
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as f:
                f.write(source)
        except OSError as e:
            return _fail(f"cannot write {args.output}: {e}", 2)
    else:
        sys.stdout.write(source)
    return 0


def _read(path: str, most: int) -> str:
    with open(path, encoding="utf-8") as f:
        return f.read(most)


def _conf_value(value: str) -> Any:
    """Numbers as numbers (the client checks their types), everything else as given."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _client(conf: Dict[str, Any], url: str) -> Any:
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient({**conf, "url": url})


def _fail(message: str, code: int) -> int:
    print(f"serdes.codegen: error: {message}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
