"""The openai and anthropic SDKs' own test suites, run against ``guardrail.wrap(client)``.

Each SDK's sdist carries its test suite; its ``client``-building fixtures (``client``, ``async_client`` and, in
anthropic's, the snapshot clients) are patched to yield ``guardrail.wrap(client)`` when
``GUARDRAIL_SDK_SUITE_WRAP=1`` and the plain client otherwise, so the same copy runs both ways and any test that
passes with the plain client and fails with the wrapped one is a place where the wrapper is not the SDK client.

The sdists are fetched beforehand (``.ci/run`` does it; tests never use the network) into ``.sdk-suites/``::

    python -m pip download --no-deps --no-binary :all: -d .sdk-suites openai==X anthropic==Y

with the installed versions (:func:`fetch_command` prints the exact line). Run as a script for a whole
comparison (plain vs wrapped, with a mock API server for ``tests/api_resources``)::

    python tests/support/sdk_suites.py openai tests/test_client.py tests/lib
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Where ``.ci/run`` puts the sdists (ignored by git).
SDISTS = REPO / ".sdk-suites"
SUITES = ("openai", "anthropic")
#: The fixtures that build the client a test uses: each yields ``client`` in the SDKs' conftest.py.
_CLIENT_FIXTURE = re.compile(r"^(?:async )?def (\w*client)\(.*?(?=^(?:@|def |async def |class )|\Z)", re.M | re.S)

_DROP_IN = '''

def _guardrail_drop_in(client):
    """Added by guardrail's tests/support/sdk_suites.py: the client, wrapped when GUARDRAIL_SDK_SUITE_WRAP=1."""
    if os.environ.get("GUARDRAIL_SDK_SUITE_WRAP") == "1":
        import guardrail

        wrapped = guardrail.wrap(client)
        assert type(wrapped).__module__.startswith("guardrail.")
        return wrapped
    return client
'''


def installed(name: str) -> str:
    """The installed version of an SDK."""
    return importlib.metadata.version(name)


def fetch_command() -> str:
    """The command that fetches the sdists of the installed SDK versions."""
    pins = " ".join(f"{name}=={installed(name)}" for name in SUITES)
    return f"python -m pip download --no-deps --no-binary :all: -d .sdk-suites {pins}"


def sdist(name: str) -> Path | None:
    """The sdist of the installed version of ``name``, if fetched."""
    found = SDISTS / f"{name}-{installed(name)}.tar.gz"
    return found if found.is_file() else None


def prepare(name: str, into: Path) -> Path:
    """Unpack the SDK's sdist under ``into`` and patch its client fixtures; the suite's root folder."""
    archive = sdist(name)
    if archive is None:
        raise FileNotFoundError(f"no sdist of {name} {installed(name)} in {SDISTS}: run {fetch_command()}")
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    root = into / f"{name}-{installed(name)}"
    conftest = root / "tests" / "conftest.py"
    text = conftest.read_text(encoding="utf-8")
    patched, count = _patch(text)
    expected = {"openai": 2, "anthropic": 4}[name]
    if count != expected:  # the SDK changed how its tests build clients: this helper must learn it
        raise RuntimeError(f"{conftest}: patched {count} client fixtures, expected {expected}")
    conftest.write_text(patched + _DROP_IN, encoding="utf-8")
    return root


def _patch(text: str) -> tuple[str, int]:
    count = 0

    def one(match: re.Match[str]) -> str:
        nonlocal count
        body, n = re.subn(r"\byield client\b", "yield _guardrail_drop_in(client)", match.group(0))
        count += n
        return body

    return _CLIENT_FIXTURE.sub(one, text), count


@dataclass(frozen=True)
class Run:
    """One run of a suite: each test's outcome (``passed``, ``failed``, ``error``, ``skipped``) by its id."""

    outcomes: dict[str, str]
    output: str

    def failing(self) -> set[str]:
        return {test for test, outcome in self.outcomes.items() if outcome in ("failed", "error")}

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for outcome in self.outcomes.values():
            found[outcome] = found.get(outcome, 0) + 1
        return found


def run(root: Path, paths: list[str], *, wrapped: bool, args: list[str] | None = None,
        env: dict[str, str] | None = None, timeout: float = 1800) -> Run:
    """Run the suite's ``paths`` (relative to its root) in a subprocess; outcomes from its JUnit XML."""
    report = root / f"report-{'wrapped' if wrapped else 'plain'}.xml"
    report.unlink(missing_ok=True)
    environment = {**os.environ, **(env or {}), "GUARDRAIL_SDK_SUITE_WRAP": "1" if wrapped else "0",
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
                   "PYTHONDONTWRITEBYTECODE": "1"}
    environment.pop("PYTEST_XDIST_WORKER", None)
    environment.pop("PYTEST_ADDOPTS", None)
    command = [sys.executable, "-m", "pytest", *paths, "-p", "no:cacheprovider", "-n", "0", "-q",
               "--junitxml", str(report), "--continue-on-collection-errors", *(args or [])]
    done = subprocess.run(command, cwd=root, env=environment, capture_output=True, text=True, timeout=timeout)
    if not report.is_file():
        said = done.stdout[-4000:] + done.stderr[-4000:]
        raise RuntimeError(f"the suite did not run (exit {done.returncode}):\n{said}")
    outcomes: dict[str, str] = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        kinds = {child.tag for child in case}
        outcome = ("failed" if "failure" in kinds else "error" if "error" in kinds
                   else "skipped" if "skipped" in kinds else "passed")
        if outcomes.get(test) not in ("failed", "error"):  # a teardown error is reported as a second case
            outcomes[test] = outcome
    return Run(outcomes, done.stdout + done.stderr)


def compare(name: str, paths: list[str], into: Path, args: list[str] | None = None,
            env: dict[str, str] | None = None) -> dict[str, object]:
    """Run ``paths`` of the ``name`` SDK's suite plain and wrapped; the counts and the newly failing tests."""
    from support.sdk_mock_api import serve

    root = prepare(name, into)
    with serve(root, name) as url:
        env = {**(env or {}), "TEST_API_BASE_URL": url}
        plain = run(root, paths, wrapped=False, args=args, env=env)
        wrapped = run(root, paths, wrapped=True, args=args, env=env)
    newly = sorted(wrapped.failing() - plain.failing())
    return {"suite": name, "paths": paths, "plain": plain.counts(), "wrapped": wrapped.counts(),
            "newly_failing": newly, "fixed": sorted(plain.failing() - wrapped.failing()),
            "failing_both": sorted(plain.failing() & wrapped.failing())}


def main(argv: list[str]) -> int:
    import tempfile

    name, *paths = argv
    with tempfile.TemporaryDirectory() as into:
        found = compare(name, paths or ["tests/test_client.py", "tests/lib"], Path(into))
    print(json.dumps(found, indent=2))
    return 1 if found["newly_failing"] else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, where the support package lives
    raise SystemExit(main(sys.argv[1:]))
