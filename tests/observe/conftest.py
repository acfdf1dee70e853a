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

from support.otel import EXPORTER, METER_PROVIDER, READER, Points, collect, collect_points, spans

__all__ = ["EXPORTER", "METER_PROVIDER", "READER", "Points", "collect", "collect_points", "spans"]
