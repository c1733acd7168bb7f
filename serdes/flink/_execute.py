"""Run a job and surface serdes' typed decode errors from the Java exception chain."""

from __future__ import annotations

import re
from typing import Optional

from pyflink.common import JobExecutionResult
from pyflink.datastream import StreamExecutionEnvironment

from .._errors import FlinkJobError

# "serdes._errors.InvalidMagicByteError: unknown magic byte 0x07 (topic='t', field=value, partition=0, offset=5)"
_ERR_LINE = re.compile(
    r"(?:^|\s)(?P<qual>(?:[\w]+\.)*(?P<type>\w+(?:Error|Exception))): (?P<msg>[^\n]*?\btopic='[^']*'[^\n]*?offset=\d+[^\n]*)"
)
_COORDS = re.compile(r"topic='(?P<topic>[^']*)'.*?partition=(?P<partition>\d+).*?offset=(?P<offset>\d+)")


def find_record_error(text: str) -> Optional[FlinkJobError]:
    """Parse the first serdes record error out of a (Java) failure text."""
    m = _ERR_LINE.search(text)
    if m is None:
        return None
    msg = m.group("msg").strip()
    c = _COORDS.search(msg)
    topic = c.group("topic") if c else None
    partition = int(c.group("partition")) if c else None
    offset = int(c.group("offset")) if c else None
    return FlinkJobError(f"{m.group('type')}: {msg}", m.group("type"), topic, partition, offset, text)


def execute(env: StreamExecutionEnvironment, job_name: str = "serdes job") -> JobExecutionResult:
    """``env.execute(job_name)``; a failure caused by a bad record raises :class:`FlinkJobError`."""
    try:
        return env.execute(job_name)
    except Exception as exc:  # Py4JJavaError and friends
        err = find_record_error(str(exc))
        if err is None:
            raise
        raise err from exc
