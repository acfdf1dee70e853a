"""The OpenTelemetry SDK that observability tests read from, installed once per process on first import.

One tracer provider with an in-memory span exporter (:data:`EXPORTER`) and one meter provider with an in-memory
metric reader (:data:`READER`, *delta* temporality), set as the global providers (OpenTelemetry allows setting each
only once, so every test folder that reads spans or metrics imports them from here). :func:`collect_points`
returns everything recorded since its previous call, by metric name (:class:`Points`). The fixtures
:func:`spans` and :func:`collect` are re-exported by the conftest.py of each folder that reads them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import Counter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import AggregationTemporality, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

EXPORTER = InMemorySpanExporter()
_TRACER_PROVIDER = trace.get_tracer_provider()
if not isinstance(_TRACER_PROVIDER, TracerProvider):  # something else may have set one already
    _TRACER_PROVIDER = TracerProvider()
    trace.set_tracer_provider(_TRACER_PROVIDER)
_TRACER_PROVIDER.add_span_processor(SimpleSpanProcessor(EXPORTER))

READER = InMemoryMetricReader(preferred_temporality={Counter: AggregationTemporality.DELTA,
                                                     Histogram: AggregationTemporality.DELTA})
METER_PROVIDER = MeterProvider(metric_readers=[READER])
metrics.set_meter_provider(METER_PROVIDER)


class Points:
    """The data points of one collection, by metric name: ``points["name"]`` is a list of
    ``(attributes, value)`` where value is a counter's sum or a histogram point (``.count``, ``.sum``...)."""

    def __init__(self) -> None:
        self.by_name: dict[str, list[tuple[dict[str, Any], Any]]] = defaultdict(list)
        self.units: dict[str, str] = {}
        self.buckets: dict[str, tuple[float, ...]] = {}

    def __getitem__(self, name: str) -> list[tuple[dict[str, Any], Any]]:
        return self.by_name.get(name, [])

    def names(self) -> set[str]:
        return {name for name, points in self.by_name.items() if points}

    def count(self, name: str, **match: Any) -> int:
        """How many measurements of a histogram (sum of point counts) or the total of a counter, over the
        points whose attributes include ``match`` (dots in names written as ``__``)."""
        wanted = {key.replace("__", "."): value for key, value in match.items()}
        total = 0
        for attributes, point in self[name]:
            if all(attributes.get(key) == value for key, value in wanted.items()):
                total += point.count if hasattr(point, "bucket_counts") else point.value
        return total

    def total(self, name: str, **match: Any) -> float:
        """The sum of a histogram's measurements over the matching points."""
        wanted = {key.replace("__", "."): value for key, value in match.items()}
        return sum(point.sum for attributes, point in self[name]
                   if all(attributes.get(key) == value for key, value in wanted.items()))


def collect_points() -> Points:
    """Everything recorded since the previous call (delta temporality)."""
    found = Points()
    data = READER.get_metrics_data()
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                found.units[metric.name] = metric.unit or ""
                for point in metric.data.data_points:
                    if hasattr(point, "explicit_bounds"):
                        found.buckets[metric.name] = tuple(point.explicit_bounds)
                    if getattr(point, "count", None) == 0 and hasattr(point, "bucket_counts"):
                        continue  # a delta histogram with nothing new
                    found.by_name[metric.name].append((dict(point.attributes or {}), point))
    return found


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The process-wide span exporter, emptied: it holds the spans this test finishes."""
    EXPORTER.clear()
    yield EXPORTER


@pytest.fixture
def collect() -> Callable[[], Points]:
    """:func:`collect_points`, called once first so that what earlier tests recorded is dropped."""
    collect_points()
    return collect_points
