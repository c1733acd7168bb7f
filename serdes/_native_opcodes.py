"""The opcodes of the programs serdes hands the native extension: one list, checked at import.

The Avro decoder's lowering (:mod:`serdes.avro._native_decoder`) and the encoder's
(:mod:`serdes.avro._native_encoder`) build their node tuples with these numbers; the extension
reads them (``rust/src/avro/schema.rs``, ``rust/src/avro_encode/program.rs``) and exports its own
table as ``OPCODES``. :mod:`serdes._native` compares that table with :func:`tables` when it loads
the extension and runs pure Python, with one warning, when they differ -- so the two sides cannot
drift apart silently. This module imports nothing of serdes (``_native`` reads it while loading).
"""

from __future__ import annotations

from typing import Dict

__all__ = ["tables"]

# decoder nodes (rust/src/avro/schema.rs)
NULL, BOOL, LONG, FLOAT, DOUBLE, STRING, BYTES, FIXED, ENUM, ARRAY, MAP, UNION, RECORD, MISMATCH = range(14)
# decoder post-processing kinds: what is done to a value once read
(P_NONE, P_FLOAT, P_ENCODE, P_DECODE, P_TS_MS, P_TS_US, P_LTS_MS, P_LTS_US, P_DATE, P_UUID, P_DECIMAL,
 P_CALL, P_NEW) = range(13)
# encoder nodes (rust/src/avro_encode/program.rs); a general union's branch kinds are these too
(E_NULL, E_BOOLEAN, E_INT, E_LONG, E_FLOAT, E_DOUBLE, E_STRING, E_BYTES, E_FIXED, E_ENUM, E_ARRAY, E_MAP,
 E_NULLABLE, E_UNION, E_RECORD, E_LOGICAL) = range(16)
# the encoder's own conversions of a logical type (F_NONE: always call the prepare function)
F_NONE, F_UUID, F_TS_MS, F_TS_US, F_DATE, F_DECIMAL = range(6)

_GROUPS = {"P_": "decoder_post", "E_": "encoder", "F_": "encoder_fast"}


def tables() -> Dict[str, Dict[str, int]]:
    """Every opcode above by program and name: what the extension's ``OPCODES`` must equal."""
    out: Dict[str, Dict[str, int]] = {"decoder": {}, "decoder_post": {}, "encoder": {}, "encoder_fast": {}}
    for name, value in globals().items():
        if name.isupper() and type(value) is int:
            out[_GROUPS.get(name[:2], "decoder")][name] = value
    return out
