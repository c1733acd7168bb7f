"""``python -m serdes.flink.build_shim``: (re)build the prebuilt shim jar shipped in the package."""

from __future__ import annotations

import shutil

from ._jars import kafka_connector_jar
from ._shim import PREBUILT_DIR, shim_jar


def main() -> None:
    jar = shim_jar(kafka_connector_jar())
    PREBUILT_DIR.mkdir(parents=True, exist_ok=True)
    for old in PREBUILT_DIR.glob("serdes-flink-shim-*.jar"):
        old.unlink()
    shutil.copy2(jar, PREBUILT_DIR / jar.name)
    print(PREBUILT_DIR / jar.name)


if __name__ == "__main__":
    main()
