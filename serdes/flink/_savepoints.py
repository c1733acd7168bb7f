"""Savepoints of a running job, through the Java job client.

PyFlink 2.2.1's ``JobClient.stop_with_savepoint`` / ``trigger_savepoint`` call Java methods
without the ``SavepointFormatType`` argument they need (``Py4JException: Method
stopWithSavepoint(...) does not exist``); these call the Java client directly.
"""

from __future__ import annotations

from pyflink.common.job_client import JobClient

from . import _pyflink

__all__ = ["stop_with_savepoint", "trigger_savepoint"]


def stop_with_savepoint(job_client: JobClient, directory: str, drain: bool = False, format: str = "canonical") -> str:
    """Stop a running job with a savepoint and return the savepoint's path (``format``:
    ``"canonical"`` or ``"native"``)."""
    j = _pyflink.java_job_client(job_client)
    return str(j.stopWithSavepoint(drain, directory, _pyflink.savepoint_format(format)).get())


def trigger_savepoint(job_client: JobClient, directory: str, format: str = "canonical") -> str:
    """Take a savepoint of a running job (it keeps running); returns the savepoint's path."""
    j = _pyflink.java_job_client(job_client)
    return str(j.triggerSavepoint(directory, _pyflink.savepoint_format(format)).get())
