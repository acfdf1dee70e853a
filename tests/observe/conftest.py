"""Fixtures of the observability tests: the OpenTelemetry SDK they read from.

One tracer provider with an in-memory span exporter and one meter provider with an in-memory metric reader,
installed as the global providers once per process by ``support.otel`` (imported when pytest loads this file;
OpenTelemetry allows setting each only once, so other folders import the same module). A test reads them through
two fixtures:

- ``spans``: the span exporter, emptied first, so it holds this test's finished spans only;
- ``collect``: a function returning everything recorded since its previous call (the reader uses *delta*
  temporality); the fixture calls it once first, dropping what earlier tests left, so a test counts its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from support.otel import EXPORTER, METER_PROVIDER, READER, Points, collect_points

__all__ = ["EXPORTER", "METER_PROVIDER", "READER", "Points", "collect_points"]


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
