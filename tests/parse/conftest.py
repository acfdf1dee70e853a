"""Tests of ``guardrail.parse``: behaviour against the spec, properties, equivalence of the fast paths with the
stages, adversarial inputs and limits, third-party corpora (JSONTestSuite, the JSON-repair suites in ``data/``).

Shared here: the JSONTestSuite timings, filled by ``test_jsontestsuite.py`` and summed up in one line at the end
of a run (not under pytest-xdist, whose workers keep their own). Random contracts with values for them are in
``tests/support/random_contracts.py``, type-aware equality in ``tests/support/equality.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Filled through the fixture below: file id -> seconds one ``parse`` took.
JSONTESTSUITE_TIMES: dict[str, float] = {}


@pytest.fixture(scope="session")
def jsontestsuite_times() -> dict[str, float]:
    return JSONTESTSUITE_TIMES


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    if not JSONTESTSUITE_TIMES:
        return
    worst = max(JSONTESTSUITE_TIMES, key=JSONTESTSUITE_TIMES.__getitem__)
    total = sum(JSONTESTSUITE_TIMES.values())
    terminalreporter.write_line(
        f"JSONTestSuite: {len(JSONTESTSUITE_TIMES)} files parsed, "
        f"max {JSONTESTSUITE_TIMES[worst] * 1000:.2f} ms ({worst}), total {total * 1000:.1f} ms"
    )
