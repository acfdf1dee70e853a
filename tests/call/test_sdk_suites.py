"""The openai and anthropic SDKs' own tests, a slice of each, pass against ``guardrail.wrap(client)``.

The slice is the SDK's client tests and the tests of the resources guardrail subclasses (chat completions,
responses, messages and the SDK helpers built on them: ``parse``, ``stream``, the tool runner), each run with the
SDK's client fixtures yielding a wrapped client (:mod:`sdk_suites`), sync and async, against a mock API server
(:mod:`sdk_mock_api`) where they expect one. Every test of the slice passes with the plain client; a failure with
the wrapped one is rerun with the plain client, and only a test that passes there counts against the wrapper.

The sdists are fetched by ``.ci/run``; without them the test skips, saying how to fetch them (and fails on CI).
``python tests/support/sdk_suites.py openai tests/api_resources tests/lib tests/test_client.py`` compares whole suites.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support import sdk_suites
from support.sdk_mock_api import serve

#: Per SDK: the test files run (relative to the sdist), and how many tests at least must pass in them (a slice
#: that shrinks because the SDK moved its tests must not pass silently).
SLICES: dict[str, tuple[list[str], int]] = {
    "openai": (["tests/test_client.py", "tests/api_resources/chat/test_completions.py",
                "tests/api_resources/test_responses.py", "tests/lib/chat/test_completions.py",
                "tests/lib/responses/test_responses.py"], 450),
    "anthropic": (["tests/test_client.py", "tests/api_resources/test_messages.py",
                   "tests/api_resources/beta/test_messages.py", "tests/api_resources/messages",
                   "tests/lib/tools/test_runners.py"], 650),
}


def _sdist_or_skip(name: str) -> None:
    if sdk_suites.sdist(name) is None:
        message = (f"the {name} {sdk_suites.installed(name)} sdist is not in .sdk-suites/ (.ci/run fetches it): "
                   f"{sdk_suites.fetch_command()}")
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


@pytest.mark.slow
@pytest.mark.parametrize("name", sdk_suites.SUITES)
def test_the_sdks_own_tests_pass_against_a_wrapped_client(name: str, tmp_path: Path) -> None:
    _sdist_or_skip(name)
    paths, least = SLICES[name]
    root = sdk_suites.prepare(name, tmp_path)
    missing = [path for path in paths if not (root / path).exists()]
    assert not missing, f"the {name} sdist no longer has {missing}: choose the slice again"
    with serve(root, name) as url:
        env = {"TEST_API_BASE_URL": url}
        wrapped = sdk_suites.run(root, paths, wrapped=True, env=env)
        failing = wrapped.failing()
        newly = failing - sdk_suites.run(root, paths, wrapped=False, env=env).failing() if failing else set()
    assert not newly, f"{len(newly)} tests of the {name} SDK fail with a wrapped client only:\n" + "\n".join(
        sorted(newly)) + "\n\n" + wrapped.output[-6000:]
    passed = wrapped.counts().get("passed", 0)
    assert passed >= least, f"only {passed} tests of the {name} slice passed:\n{wrapped.output[-3000:]}"
