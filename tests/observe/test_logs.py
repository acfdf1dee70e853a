"""guardrail's events: silent on stdout by default (stdlib logging), the application's structlog once configured."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
import structlog
from pydantic import BaseModel
from structlog.testing import capture_logs

from guardrail.observe import get_logger


class Answer(BaseModel):
    ok: bool


@pytest.fixture
def unconfigured() -> Iterator[None]:
    saved = structlog.get_config()
    structlog.reset_defaults()
    assert not structlog.is_configured()
    yield
    structlog.configure(**saved)


def _call() -> None:
    import openai

    import guardrail
    from guardrail.testing import Emulator, reply

    with Emulator() as emu:
        emu.script(reply.answer('{"ok": true}'))
        client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="t"))
        assert client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "x"}],
                                              response_model=Answer).ok


def test_without_structlog_configured_nothing_is_printed_and_stdlib_logging_gets_the_events(
        unconfigured: None, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="guardrail"):
        _call()
    out = capsys.readouterr()
    assert "guardrail." not in out.out and "guardrail." not in out.err
    events = [r.guardrail["event"] for r in caplog.records if hasattr(r, "guardrail")]  # type: ignore[attr-defined]
    assert "guardrail.attempt" in events and "guardrail.call.end" in events
    assert any("guardrail.attempt" in r.getMessage() and "attempt=1" in r.getMessage() for r in caplog.records)


def test_disabled_stdlib_loggers_cost_no_formatting(unconfigured: None, caplog: pytest.LogCaptureFixture) -> None:
    class Loud:
        def __repr__(self) -> str:
            raise AssertionError("formatted although the logger is disabled")

    with caplog.at_level(logging.WARNING, logger="guardrail"):
        get_logger().info("guardrail.test", value=Loud())
    assert not caplog.records


def test_with_structlog_configured_events_go_through_the_applications_pipeline() -> None:
    with capture_logs() as logs:
        _call()
    assert {"guardrail.attempt", "guardrail.call.end"} <= {entry["event"] for entry in logs}
    assert any(entry["event"] == "guardrail.attempt" and entry["attempt"] == 1 for entry in logs)


@pytest.mark.slow
def test_wrapping_per_call_sends_without_sdk_retries_and_does_not_keep_clients_alive() -> None:
    """The decorator and chain tiers wrap per call: nothing is copied (the view without SDK retries shares the
    client's state) and nothing keeps the client alive."""
    import gc
    import weakref

    import openai

    import guardrail

    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="t")
    first = guardrail.wrap(client).chat.completions
    second = guardrail.wrap(client).chat.completions
    for method in (first, second):
        quiet = method._guardrail_quiet()._client  # what structured calls send through
        assert quiet.__dict__ is client.__dict__ and quiet.max_retries == 0 and client.max_retries != 0
    alive = weakref.ref(client)
    del client, first, second, method, quiet
    gc.collect()
    assert alive() is None
