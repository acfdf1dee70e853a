"""FaultProfile: a seeded responder that mixes right answers with the faults real vendors produce.

Why: a retry/repair loop is only proven by traffic that looks like production's: occasional 429s, cut-off
output, refusals, and above all right answers wrapped in small formatting slips that a lenient parser should
repair without asking the model again. The sequence is a pure function of the seed and the request order.
"""

from __future__ import annotations

import json
import random
import threading
from collections.abc import Callable
from typing import Any

from guardrail.errors import ConfigError
from guardrail.testing import behaviours as reply
from guardrail.testing.behaviours import Reply
from guardrail.testing.examples import example_instance
from guardrail.testing.recording import RecordedRequest

__all__ = ["KINDS", "SLIPS", "FaultProfile", "default_answer", "slip"]

#: What FaultProfile can serve, as counted in :attr:`FaultProfile.counts`.
KINDS = ("rate_limit", "truncation", "refusal", "slip", "clean")
#: The formatting slips, in the order a draw indexes them.
SLIPS = ("fence", "trailing_comma", "single_quotes", "python_literals", "comment")


def default_answer(request: RecordedRequest) -> str:
    """A valid minimal instance of the request's schema as JSON, or ``"{}"`` without a schema."""
    schema = request.schema
    return json.dumps(example_instance(schema)) if schema is not None else "{}"


def _render(value: Any, *, quote: str, python: bool) -> str:
    """JSON-like text with strings in ``quote`` quotes and, if ``python``, the literals True/False/None."""
    if value is True or value is False or value is None:
        literal = json.dumps(value)
        return {"true": "True", "false": "False", "null": "None"}[literal] if python else literal
    if isinstance(value, str):
        inner = json.dumps(value)[1:-1]
        if quote == "'":
            inner = inner.replace('\\"', '"').replace("'", "\\'")
        return quote + inner + quote
    if isinstance(value, list):
        return "[" + ", ".join(_render(item, quote=quote, python=python) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (
            f"{_render(str(k), quote=quote, python=python)}: {_render(v, quote=quote, python=python)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(value)


def _has(value: Any, test: Callable[[Any], bool]) -> bool:
    if test(value):
        return True
    if isinstance(value, dict):
        return any(_has(v, test) for v in value.values()) or any(test(k) for k in value)
    if isinstance(value, list):
        return any(_has(v, test) for v in value)
    return False


def slip(kind: str, text: str) -> str | None:
    """``text`` with the formatting slip ``kind`` applied, or ``None`` when that slip does not apply to it.

    ``fence``: prose, a ```json fence around the answer, prose. ``trailing_comma``: a comma before the last
    closing bracket. ``single_quotes``: strings and keys in single quotes. ``python_literals``: True, False,
    None. ``comment``: a ``//`` comment line after the opening bracket.
    """
    if kind == "fence":
        return f"Here is the JSON you asked for:\n```json\n{text}\n```\nLet me know if you need anything else."
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if kind == "trailing_comma" and isinstance(value, dict | list) and value:
        body = json.dumps(value, indent=2)
        return body[:-1].rstrip() + ",\n" + body[-1]
    if kind == "single_quotes" and _has(value, lambda v: isinstance(v, str)):
        return _render(value, quote="'", python=False)
    if kind == "python_literals" and _has(value, lambda v: v is None or isinstance(v, bool)):
        return _render(value, quote='"', python=True)
    if kind == "comment" and isinstance(value, dict | list):
        body = json.dumps(value, indent=2)
        return body[0] + "\n  // the requested value" + body[1:]
    return None


class FaultProfile:
    """A responder (``emu.responder = FaultProfile(...)``) that serves seeded, production-like faults.

    For each request one draw picks: a 429 (``retry-after: 0`` or a small ``retry-after-ms``) with
    probability ``rate_limit``; the first half of the answer, truncated, with ``truncation``; a refusal with
    ``refusal``; otherwise the correct answer from ``answer(request)``, wrapped in one formatting slip
    (see :func:`slip`; prose and fences are not used for forced-tool requests) with probability ``slip``.
    Every behaviour is answered after ``latency`` seconds. Four draws are taken per request whatever is
    served, so the sequence of kinds depends only on the seed and the number of requests.

    Attributes:
        counts: how many of each kind were served (keys: :data:`KINDS`).
        slip_counts: how many of each slip were served (keys: :data:`SLIPS`).
        history: the kinds served, in order.
    """

    def __init__(
        self,
        seed: int = 0,
        slip: float = 0.30,
        rate_limit: float = 0.10,
        truncation: float = 0.05,
        refusal: float = 0.02,
        latency: float = 0.05,
        answer: Callable[[RecordedRequest], str] | None = None,
    ) -> None:
        probabilities = {"slip": slip, "rate_limit": rate_limit, "truncation": truncation, "refusal": refusal}
        for name, value in probabilities.items():
            if not 0.0 <= value <= 1.0:
                raise ConfigError(f"{name} must be a probability, got {value!r}")
        if rate_limit + truncation + refusal > 1.0:
            raise ConfigError("rate_limit + truncation + refusal must not exceed 1")
        self.seed = seed
        self.slip = slip
        self.rate_limit = rate_limit
        self.truncation = truncation
        self.refusal = refusal
        self.latency = latency
        self.answer = answer or default_answer
        self.counts: dict[str, int] = dict.fromkeys(KINDS, 0)
        self.slip_counts: dict[str, int] = dict.fromkeys(SLIPS, 0)
        self.history: list[str] = []
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def __call__(self, request: RecordedRequest) -> Reply:
        with self._lock:
            kind_draw, slip_draw, which_draw, retry_draw = (self._random.random() for _ in range(4))
            kind, behaviour = self._choose(request, kind_draw, slip_draw, which_draw, retry_draw)
            self.counts[kind] += 1
            self.history.append(kind)
        return behaviour.after(self.latency)

    def _choose(
        self, request: RecordedRequest, kind_draw: float, slip_draw: float, which_draw: float, retry_draw: float
    ) -> tuple[str, Reply]:
        if kind_draw < self.rate_limit:
            if retry_draw < 0.5:
                return "rate_limit", reply.rate_limited(retry_after=0)
            return "rate_limit", reply.rate_limited(retry_after_ms=1 + int((retry_draw - 0.5) * 40))
        kind_draw -= self.rate_limit
        if kind_draw < self.truncation:
            text = self.answer(request)
            return "truncation", reply.truncated(text[: max(1, len(text) // 2)])
        kind_draw -= self.truncation
        if kind_draw < self.refusal:
            return "refusal", reply.refusal()
        text = self.answer(request)
        if slip_draw < self.slip:
            forms = [form for form in SLIPS if not (form == "fence" and request.forced_tool)]
            applied = [(form, slipped) for form in forms if (slipped := slip(form, text)) is not None]
            if applied:
                form, slipped = applied[int(which_draw * len(applied))]
                self.slip_counts[form] += 1
                return "slip", reply.answer(slipped)
        return "clean", reply.answer(text)
