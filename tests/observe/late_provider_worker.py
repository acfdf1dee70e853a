"""Run in a fresh interpreter by tests/observe/test_telemetry.py: calls made before the application configures any
OpenTelemetry provider, then after; prints what the SDK recorded as JSON.

Fresh, because OpenTelemetry's global providers can be set only once per process, and the test is about the
time before they are set: guardrail opens no span and records no metric then (there is nowhere for them to go),
takes the trace id from a propagated parent context when there is one, and starts tracing and counting with
the first call after the providers are set.
"""

from __future__ import annotations

import json

import openai
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from pydantic import BaseModel

import guardrail
from guardrail.testing import Emulator, reply

PARENT = 0x0AF7651916CD43DD8448EB211C80319C


class Contact(BaseModel):
    name: str


def main() -> None:
    out: dict[str, object] = {}
    with Emulator() as emu:
        client = guardrail.wrap(openai.OpenAI(base_url=emu.openai_base_url, api_key="test", timeout=10))
        ask = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "x"}], "response_model": Contact}
        emu.script(*[reply.answer('{"name": "Kim"}')] * 4)
        out["unset"] = [client.chat.completions.create_with_result(**ask).trace_id for _ in range(2)]
        parent = NonRecordingSpan(SpanContext(PARENT, 0x00F067AA0BA902B7, is_remote=True,
                                              trace_flags=TraceFlags(TraceFlags.SAMPLED)))
        with trace.use_span(parent):
            out["propagated"] = client.chat.completions.create_with_result(**ask).trace_id
        exporter = InMemorySpanExporter()
        tracer_provider = TracerProvider()
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(tracer_provider)
        reader = InMemoryMetricReader()
        metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
        out["set"] = client.chat.completions.create_with_result(**ask).trace_id
        out["spans"] = [(span.name, format(span.context.trace_id, "032x")) for span in exporter.get_finished_spans()]
        data = reader.get_metrics_data()
        points = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    for point in metric.data.data_points:
                        points.append((metric.name, getattr(point, "count", None) or getattr(point, "value", None)))
        out["points"] = points
    out["parent"] = format(PARENT, "032x")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
