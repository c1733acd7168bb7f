"""Test/demo infrastructure: a local Kafka broker and a Confluent-compatible
schema registry (Apicurio Registry 3, ``/apis/ccompat/v7``) as java processes.

    from serdes.testing import local_servers
    with local_servers() as s:
        s.bootstrap_servers   # "127.0.0.1:PORT"
        s.registry_url        # "http://127.0.0.1:PORT/apis/ccompat/v7"

    from serdes.testing import LocalFlinkCluster
    with LocalFlinkCluster() as cluster:       # JobManager + 2 TaskManagers, local processes
        cluster.submit("job.py", args=[...])   # flink run --python

    from serdes.testing import LocalPostgres, LocalKafkaConnect   # the CDC tests' database and Connect
    with LocalPostgres() as pg, LocalKafkaConnect(s.bootstrap_servers) as connect:
        connect.create_connector("pg", {...})  # Debezium's PostgreSQL connector, Apicurio's converters

CLI: ``python -m serdes.testing fetch [--cdc]`` / ``python -m serdes.testing run``.
Pure stdlib + confluent-kafka; needs ``java`` (17+) and ``mvn`` on PATH.
"""

from ._maven import MissingToolError, find_java, cache_dir, fetch_all, fetch_apicurio, fetch_cdc, fetch_kafka, missing_tools
from ._flink_cluster import FlinkJobFailed, FlinkSubmitError, LocalFlinkCluster, flink_home
from .._errors import ServerStartError
from ._apicurio import LocalRegistry
from ._kafka import LocalKafka
from ._connect import ConnectorFailed, LocalKafkaConnect, apicurio_v2_url, debezium_postgres_config
from ._postgres import LocalPostgres
from ._ports import free_port
from ._servers import LocalServers, local_servers

__all__ = [
    "FlinkJobFailed",
    "FlinkSubmitError",
    "LocalFlinkCluster",
    "flink_home",
    "LocalKafka",
    "LocalKafkaConnect",
    "LocalPostgres",
    "ConnectorFailed",
    "apicurio_v2_url",
    "debezium_postgres_config",
    "LocalRegistry",
    "LocalServers",
    "MissingToolError",
    "ServerStartError",
    "cache_dir",
    "fetch_all",
    "find_java",
    "fetch_apicurio",
    "fetch_kafka",
    "fetch_cdc",
    "free_port",
    "local_servers",
    "missing_tools",
]
