"""A replay corpus: record structured calls, then re-read every recorded answer under a new contract.

``guardrail.wrap(client, record="calls.jsonl")`` records each structured call (:mod:`.record`: the request hash,
prompt version, contract and schema version, every raw output, the outcome; secrets redacted). :func:`replay`
(and ``guardrail replay RECORDING --contract MODULE:Type``) re-reads the recorded answers under a changed contract
and rules, without calling any vendor, and reports what is still valid, what now fails (regressions), what is
newly valid and which values changed (:mod:`.replaying`): a gate for a schema or prompt change in CI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from guardrail._lazy import namespace

if TYPE_CHECKING:
    from guardrail.replay.record import JsonlRecorder, Recorder, RecordTo, StoreRecorder
    from guardrail.replay.replaying import Judged, Replayed, ReplayReport, judge_answer, read_records, replay

_NAMES: dict[str, str] = {
    "JsonlRecorder": "guardrail.replay.record",
    "Judged": "guardrail.replay.replaying",
    "Recorder": "guardrail.replay.record",
    "RecordTo": "guardrail.replay.record",
    "Replayed": "guardrail.replay.replaying",
    "ReplayReport": "guardrail.replay.replaying",
    "StoreRecorder": "guardrail.replay.record",
    "judge_answer": "guardrail.replay.replaying",
    "read_records": "guardrail.replay.replaying",
    "replay": "guardrail.replay.replaying",
}

__all__ = [
    "JsonlRecorder",
    "Judged",
    "RecordTo",
    "Recorder",
    "ReplayReport",
    "Replayed",
    "StoreRecorder",
    "judge_answer",
    "read_records",
    "replay",
]

__getattr__, __dir__ = namespace(__name__, globals(), _NAMES)
