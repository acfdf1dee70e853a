"""Run in a fresh interpreter by tests/observe/test_metrics.py: guardrail beside the OpenAI SDK's own OpenTelemetry
instrumentation (opentelemetry-instrumentation-openai-v2), printing what each recorded as JSON.

Fresh, because the instrumentation patches the SDK process-wide and needs ``import httpx`` to work: openai 3.x
uses httpx2, whose ``alias_httpx()`` must run before anything imports ``httpx``.
"""

from __future__ import annotations

import json

import httpx2

httpx2.alias_httpx()

from opentelemetry import metrics  # noqa: E402
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor  # noqa: E402
from opentelemetry.sdk.metrics import MeterProvider  # noqa: E402
from opentelemetry.sdk.metrics.export import InMemoryMetricReader  # noqa: E402
from pydantic import BaseModel  # noqa: E402

reader = InMemoryMetricReader()
provider = MeterProvider(metric_readers=[reader])
metrics.set_meter_provider(provider)
OpenAIInstrumentor().instrument(meter_provider=provider)

import openai  # noqa: E402

import guardrail  # noqa: E402
from guardrail.testing import Emulator, reply  # noqa: E402


class Contact(BaseModel):
    name: str


def main() -> None:
    with Emulator() as emu:
        raw = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10)
        client = guardrail.wrap(raw, retry=guardrail.RetryPolicy(initial_wait=0.01, max_wait=0.05))
        # Chat Completions (instrumented), plain then streamed: each with one 429 retried and one re-ask
        ask = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], "response_model": Contact}
        for stream in (False, True):
            emu.script(reply.rate_limited(retry_after=0), reply.answer('{"name": 1.5}', usage=(10, 3)),
                       reply.answer('{"name": "Ada"}', usage=(20, 5)))
            if stream:
                value = list(client.chat.completions.create_partial(**ask))[-1]
            else:
                value = client.chat.completions.create(**ask)
            assert value == Contact(name="Ada"), value
        # Responses (not instrumented by openai-v2 2.4b0): guardrail's own GenAI metrics
        emu.script(reply.answer('{"name": "Bo"}', usage=(7, 2)))
        client.responses.create(model="gpt-4o", input="x", response_model=Contact)
    points = []
    data = reader.get_metrics_data()
    for resource in data.resource_metrics if data else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    points.append({"scope": scope.scope.name, "name": metric.name,
                                   "attributes": dict(point.attributes or {}),
                                   "count": getattr(point, "count", None),
                                   "sum": getattr(point, "sum", None), "value": getattr(point, "value", None)})
    print(json.dumps(points))


if __name__ == "__main__":
    main()
