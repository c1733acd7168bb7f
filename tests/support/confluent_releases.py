"""The installed confluent-kafka release, for tests of features newer than the range's oldest (2.12).

A test of such a feature either checks both sides (the feature on a release that has it, the
:class:`serdes.ConfluentVersionError` naming the release on one that lacks it) or is marked with
:func:`needs`, whose skip reason names the release; the newest leg of scripts/test-matrix.sh (and
the main test environment) runs those.
"""

from __future__ import annotations

from typing import Any, Dict

import pytest

from serdes._confluent import at_least, confluent_version

__all__ = ["at_least", "confluent_version", "needs", "TOPIC_STRATEGY"]


def needs(release: str, feature: str) -> Any:
    """Skip unless confluent-kafka ``release`` (``"2.16"``) or newer is installed."""
    return pytest.mark.skipif(
        not at_least(release),
        reason=f"confluent-kafka {release}+ needed for {feature} ({confluent_version()} installed); "
        f"the newest leg of scripts/test-matrix.sh runs it",
    )


#: the conf for the topic subject name strategy: 2.14+ default to ASSOCIATED, so tests that count on
#: "<topic>-value" name TOPIC; before 2.14 (no subject.name.strategy.type) the topic strategy is the
#: default
TOPIC_STRATEGY: Dict[str, Any] = {"subject.name.strategy.type": "TOPIC"} if at_least("2.14") else {}
