"""One item of a batch job as a call of the attempt loop: built like a live call, stepped by its replies.

Each item is the keywords of one ``create(...)`` call. :class:`Calls` turns them into the
:class:`~guardrail.call.engine.Call` a live structured call would make (the wrapped client's structured
resource builds it: the same contract, plans and mode, the same conflicts refused), without a deadline, since a
batch answer comes hours later. :class:`ItemRun` runs that call's attempt loop up to the point where it waits
for an answer, after the replies the item already got (:func:`~guardrail.call.engine.replayed`): then it holds
either the request of the item's next ask (``send``), or the item's end (``value``: the
:class:`~guardrail.Result`, or the :class:`~guardrail.errors.CallError` a live call would raise). Parse, repair,
the semantic gates, the feedback turn and the attempt limits are the loop's, so a batch answer is judged exactly
as a live one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from guardrail.call.client import WrappedClient, structured_method
from guardrail.call.engine import Call, Record, Send, Sleep, attempt_loop, replayed
from guardrail.call.http import Reading
from guardrail.call.options import CallOptions
from guardrail.errors import BatchItemFailed, CallError, VendorError
from guardrail.outcome import Result
from guardrail.vendors.base import Completion
from guardrail.vendors.batches import ItemError
from guardrail.vendors.failures import BadResponse

__all__ = ["Calls", "ItemOutcome", "ItemRun", "read_answer"]

#: The outcome of an item: its validated result, or the typed error a live call would end with.
ItemOutcome = Result[Any] | CallError


class Calls:
    """Makes each item's :class:`Call` through the wrapped client's structured resource for the job's API."""

    def __init__(self, client: WrappedClient, api: str | None, options: Mapping[str, Any]) -> None:
        self.resource: Any = structured_method(client, api)
        self.endpoint = self.resource.endpoint
        self.options = dict(options)

    def call(self, kwargs: Mapping[str, Any]) -> Call:
        sdk_kwargs = dict(kwargs)
        options = CallOptions(**self.options)
        call: Call = self.resource._guardrail_call(options, sdk_kwargs)
        return dataclasses.replace(call, deadline=None)

    def live(self, kwargs: Mapping[str, Any]) -> tuple[Call, Any]:
        """The item's call as a live one (with the client's deadline) and the SDK method it sends with."""
        call: Call = self.resource._guardrail_call(CallOptions(**self.options), dict(kwargs))
        return call, self.resource._guardrail_send()


class ItemRun:
    """The item's attempt loop, brought to where it waits for the next answer (or to its end)."""

    def __init__(self, call: Call, replies: Sequence[Completion | ItemError | BadResponse], custom_id: str) -> None:
        self.call, self.custom_id = call, custom_id
        self.send: Send | None = None
        self.value: ItemOutcome | None = None
        self._loop = replayed(attempt_loop(call), list(replies))
        self._advance(None)

    def feed(self, reply: Completion | ItemError | BadResponse) -> None:
        """Answer the ask the item waits on; the run moves to its next ask or its end."""
        assert self.send is not None, "an item is fed only while it waits for an answer"
        self.send = None
        self._advance(reply)

    def _advance(self, reply: Completion | Exception | None) -> None:
        try:
            effect = self._loop.send(reply)
            while isinstance(effect, (Sleep, Record)):
                if isinstance(effect, Record):  # a client wrapped with record=: the item's call, recorded at its end
                    effect.perform()
                # a Sleep is a retryable item error: its retry is the next round's ask
                effect = self._loop.send(None)
        except StopIteration as end:
            self.value = end.value
            return
        except CallError as error:
            self.value = _never_ran(error, self.custom_id)
            return
        self.send = effect

    def close(self) -> None:
        self._loop.close()


def _never_ran(error: CallError, custom_id: str) -> CallError:
    """An item the vendor never ran ends as :class:`BatchItemFailed`, with the record the loop kept."""
    cause = error.__cause__
    if isinstance(error, VendorError) and isinstance(cause, ItemError) and cause.reason != "errored":
        failed = BatchItemFailed(f"batch item {custom_id!r} was not run: {cause}", reason=cause.reason,
                                 custom_id=custom_id, outcome=error.outcome)
        failed.__cause__ = cause
        return failed
    return error


def read_answer(call: Call, send: Send, answer: Any) -> Completion | ItemError | BadResponse:
    """A vendor's answer to one item as the loop's reply: the endpoint reads the response object as it reads a
    live one (an answer not in the API's shape is a :class:`BadResponse`, retried like a live one)."""
    if isinstance(answer, ItemError):
        return answer
    try:
        return Reading(call.endpoint, None, stream=False, tool=send.tool, show=None).answer(answer)
    except BadResponse as bad:
        return bad
