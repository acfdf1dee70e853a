"""``guardrail demo``: triage customer inquiries (English and Korean) through the whole pipeline.

With ``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY`` or ``GEMINI_API_KEY`` set, the inquiries go to that vendor.
Without, they go to the bundled vendor emulator, which replays realistic vendor answers: clean JSON, fenced and
chatty JSON with a trailing comma, drifted field names and a number in a string, a value that breaks the contract
(one feedback round), a 429 and an answer cut off at the token limit, Python-style literals. Each row shows what
the vendor returned, what each layer did, and the typed result.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from enum import Enum
from typing import Any

from pydantic import BaseModel, Field

from guardrail._optional import require
from guardrail.call.config import Config
from guardrail.call.decorator import structured
from guardrail.call.options import RetryPolicy
from guardrail.errors import CallError, ConfigError
from guardrail.outcome import Outcome, Result


class Category(str, Enum):  # noqa: UP042 - a str mixin serialises the same on every Python version
    """Where an inquiry goes."""

    billing = "billing"
    shipping = "shipping"
    account = "account"
    technical = "technical"
    other = "other"


class Ticket(BaseModel):
    """A triaged customer inquiry."""

    urgency: int = Field(ge=1, le=5, description="1 = can wait, 5 = drop everything")
    category: Category
    summary: str = Field(max_length=120, description="one line, in English")


INQUIRIES = (
    "I was charged twice for my March invoice. Please refund one of the charges.",
    "배송이 2주째 안 와요. 주문번호 88213, 환불해 주세요!",
    "비밀번호를 재설정했는데 로그인이 안 됩니다. 오늘 발표라서 급해요.",
    "Your app crashes every time I open the settings page on Android 14.",
    "Do you ship to Jeju island? And how long does delivery take?",
    "지난달 영수증을 다시 받을 수 있을까요?",
)


def recorded_answers() -> list[Any]:
    """What the emulated vendor answers, in order: realistic outputs, slips and faults included."""
    from guardrail.testing import reply

    return [
        reply.answer('{"urgency": 3, "category": "billing", "summary": "Charged twice for the March invoice; '
                     'wants one charge refunded"}'),
        reply.answer('Sure! Here is the ticket:\n```json\n{\n  "urgency": 4,\n  "category": "shipping",\n'
                     '  "summary": "Order 88213 not delivered after two weeks; customer wants a refund",\n}\n```\n'
                     "Let me know if you need anything else."),
        reply.answer('{"Urgency": "5", "Category": "Account ", "Summary": "Cannot log in after a password reset; '
                     'needs access today for a presentation"}'),
        reply.answer('{"urgency": "high (4)", "category": "technical"}'),
        reply.answer('{"urgency": 4, "category": "technical", "summary": "App crashes when opening settings on '
                     'Android 14"}'),
        reply.rate_limited(retry_after=0.2),
        reply.truncated('{"urgency": 2, "category": "shipping", "summary": "Asks whether'),
        reply.answer('{"urgency": 2, "category": "shipping", "summary": "Asks whether we ship to Jeju island '
                     'and how long delivery takes"}'),
        reply.answer("{'urgency': 1, 'category': 'billing', 'summary': 'Wants a copy of last month receipt'}"),
    ]


def triage(inquiry: str) -> Ticket:
    """Triage one customer inquiry (it may be in Korean) into a support ticket: urgency from 1 (can wait) to
    5 (drop everything), one category, and a one-line summary in English."""
    raise NotImplementedError  # never run: the model computes the return value


@dataclass
class Row:
    """One inquiry's journey, for the table or ``--json``."""

    inquiry: str
    raw: str
    steps: list[str]
    result: Ticket | None
    error: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"inquiry": self.inquiry, "vendor_returned": self.raw, "steps": self.steps,
                "result": self.result.model_dump(mode="json") if self.result else None, "error": self.error}


def steps_of(outcome: Outcome) -> list[str]:
    """What each layer did, in words, from a call's outcome."""
    steps = [f"mode: {outcome.mode}"]
    retries = outcome.vendor_calls - len(outcome.attempts)
    if retries:
        steps.append(f"transport retries: {retries} (429/5xx, Retry-After honoured)")
    for attempt in outcome.attempts:
        kind = attempt.error_kind
        if kind == "truncated" and attempt.raw is not None and attempt.max_tokens:
            steps.append(f"attempt {attempt.number}: cut off at {attempt.max_tokens} tokens -> limit raised once")
        elif kind is not None:
            steps.append(f"attempt {attempt.number}: {kind} -> one feedback round")
        counts = Counter(fix.kind for fix in attempt.fixes)
        if counts and kind is None:
            steps.append("repairs: " + ", ".join(k if n == 1 else f"{k} x{n}" for k, n in sorted(counts.items())))
    return steps


def run(config: Config) -> list[Row]:
    """Triage every inquiry with ``config``; never raises for a failed call (it becomes the row's error)."""
    rows = []
    for inquiry in INQUIRIES:
        fn = structured(config=config, max_tokens=300)(triage)
        try:
            result: Result[Ticket] = fn.with_result(inquiry)
        except CallError as error:
            raw = error.outcome.attempts[0].raw if error.outcome.attempts else None
            rows.append(Row(inquiry, raw or "", steps_of(error.outcome), None, f"{type(error).__name__}: {error}"))
            continue
        rows.append(Row(inquiry, result.attempts[0].raw or "", steps_of(result), result.value, None))
    return rows


#: Each vendor's API key variable, in the order :meth:`Config.from_env` picks a vendor by them, and its name.
_KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "gemini": "GEMINI_API_KEY"}
_NAMES = {"openai": "OpenAI", "anthropic": "Anthropic", "gemini": "Gemini"}


def live_config() -> tuple[Config, str] | None:
    """A config for the real vendor when an API key is set, with a line saying so; else ``None``."""
    env = os.environ
    if not any(env.get(key) for key in _KEYS.values()):
        return None
    config = Config.from_env()
    chosen = env.get("GUARDRAIL_VENDOR") or next(vendor for vendor, key in _KEYS.items() if env.get(key))
    return config, f"Calling the real {_NAMES.get(chosen, chosen)} API ({config.model}) with the API key from the " \
        "environment."


def emulated(vendor: str) -> tuple[Any, Config]:
    """A started emulator replaying :func:`recorded_answers`, and a config pointing the chosen SDK at it.

    The SDK is imported first, so that a missing one (:class:`~guardrail.errors.MissingExtra`) leaves no emulator
    running.
    """
    from guardrail.testing import Emulator

    if vendor not in _KEYS:
        raise ConfigError(f"vendor must be 'openai', 'anthropic' or 'gemini', not {vendor!r}")
    module = "google.genai" if vendor == "gemini" else vendor
    sdk: Any = require(module, vendor, "the demo")  # MissingExtra naming the extra, before anything starts
    emulator = Emulator().start()
    emulator.script(*recorded_answers())
    retry = RetryPolicy(initial_wait=0.05, max_wait=1.0, deadline=30)
    if vendor == "anthropic":
        client = sdk.Anthropic(base_url=emulator.anthropic_base_url, api_key="emulator")
        return emulator, Config(client=client, model="claude-haiku-4-5", retry=retry)
    if vendor == "gemini":
        client = sdk.Client(api_key="emulator", http_options={"base_url": emulator.gemini_base_url})
        return emulator, Config(client=client, model="gemini-2.5-flash", retry=retry)
    client = sdk.OpenAI(base_url=emulator.openai_base_url, api_key="emulator")
    return emulator, Config(client=client, model="gpt-4o-mini", retry=retry)


def as_json(rows: list[Row], source: str) -> str:
    """The machine-readable form of a demo run."""
    return json.dumps({"source": source, "rows": [row.to_dict() for row in rows]}, ensure_ascii=False, indent=2)
