"""``create_iterable``: the items of a list, each handed over as soon as it is complete and validated.

``client.chat.completions.create_iterable(..., response_model=Ticket)`` (``generate_content_iterable`` on
Gemini's ``models``; ``.iterate(...)`` on a ``@structured`` function) asks the model for a list of ``Ticket``,
wrapped as ``{"items": [...]}`` (:func:`list_contract`: strict native modes need an object root), streams the
answer and yields each ``Ticket`` once the ``,`` or ``]`` after it has arrived and it has passed the contract and
the semantic ``rules=`` (checked per item). Iterating gives the items; afterwards ``.result`` holds a
:class:`~guardrail.Result` of the whole list, its usage and attempts added up over every request.

How an item is found: each streamed try gets a :class:`ItemReader` (the driver's per-try reader, in the place of
the previews' :class:`~guardrail.call.streaming.Previewer`), which reads each piece once with
:class:`~guardrail.parse.items.ItemSpans` and hands over the *text* of each finished member; the text is read by
the parse layer (repairs, duplicate keys and all) against the item type. An item the text stops inside is never
yielded. The whole answer is still judged by the attempt loop at the end (:mod:`guardrail.call.engine`), one
attempt per request; its list must begin with the items yielded from that answer (else :class:`GaveUp`: the
answer held another list, a corrected one after a broken first, and its rest never completes the wrong one).

What is missing is asked for, and only that (:class:`ListRun`):

* the answer is cut off (the token limit, or the connection lost after items were yielded: then the request is
  not sent again as it was), or
* an item fails the contract or a rule (the items after it in that answer are not taken: order is kept),

then the next request replays the items yielded so far as the model's own answer and asks for the rest of the
list after them ("the N items above are kept"), with the problem found; its items are yielded after the
earlier ones. Positions dedupe: an item is yielded once, at its place in the list (a transport retry that
starts the same answer again yields only what goes past what was yielded). Each request is one of the call's
``max_attempts``, all share its deadline and budget, and the mode the first request used is kept (a continued
answer is replayed in that mode). A refusal, a declined item, a rule that ends the call, the budget or the
deadline end the iteration with their typed error, the items so far already yielded; the error's ``outcome``
covers every request.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import re
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterator
from contextlib import aclosing, closing
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, PydanticUserError, create_model
from pydantic_core import to_jsonable_python

from guardrail.call.engine import Call, Send, iterate_async, iterate_sync
from guardrail.call.examples import checked
from guardrail.call.options import CallOptions, RetryPolicy
from guardrail.contract import validation_context
from guardrail.errors import (
    CallError,
    Declined,
    GaveUp,
    NotReady,
    OutputTruncated,
    SemanticRejected,
    UsageError,
    VendorUnavailable,
)
from guardrail.gates.semantic import evaluate
from guardrail.outcome import Attempt, Budget, Outcome, Partial, Result, Usage, result_from
from guardrail.parse.absent import ABSENT_AS_NULL_STAGES
from guardrail.parse.feedback import semantic_feedback
from guardrail.parse.items import ItemSpans
from guardrail.parse.pipeline import parse_report
from guardrail.vendors.base import Accumulator, Completion, Exchange, Pieces
from guardrail.vendors.profiles import Mode

__all__ = ["ITEMS_KEY", "AsyncItemStream", "Found", "ItemReader", "ItemStream", "ListRun", "item_type_of",
           "list_contract"]

T = TypeVar("T")

#: The key the list is wrapped under in what the model is asked for: ``{"items": [...]}``.
ITEMS_KEY = "items"

# -- the contract the model is asked for -----------------------------------------------------------------------------
def list_contract(item_type: Any) -> Any:
    """The contract of the whole answer: an object whose ``items`` is a list of ``item_type`` (a pydantic model
    named ``<Item>List``, or a JSON Schema for a JSON Schema item). Made once per item type."""
    if isinstance(item_type, dict):
        return _schema_list(json.dumps(item_type, sort_keys=True))
    try:
        try:
            return _model_list(item_type)
        except TypeError:  # an unhashable type expression: made for this call
            return _model_list.__wrapped__(item_type)
    except (PydanticUserError, TypeError, AttributeError) as error:  # a Regex/Grammar, or no type at all
        raise UsageError(f"create_iterable needs an item contract (a model, a type, a JSON Schema dict) whose "
                         f"list pydantic can build, not {item_type!r}: a Regex or Grammar answer is one text, "
                         f"asked with create() ({error})") from None


@functools.lru_cache(maxsize=256)
def _model_list(item_type: Any) -> Any:
    name = re.sub(r"\W", "", str(getattr(item_type, "__name__", "") or "")) or "Item"
    fields: dict[str, Any] = {ITEMS_KEY: (list[item_type], ...)}
    return create_model(f"{name}List", __doc__=f"A list of {name} items, in order.", **fields)


@functools.lru_cache(maxsize=256)
def _schema_list(item_json: str) -> dict[str, Any]:
    item = json.loads(item_json)
    defs = item.pop("$defs", None)
    wrapper: dict[str, Any] = {"title": "ItemList", "type": "object",
                               "properties": {ITEMS_KEY: {"type": "array", "items": item}},
                               "required": [ITEMS_KEY], "additionalProperties": False}
    if defs:
        wrapper["$defs"] = defs  # refs (#/$defs/...) resolve from the new root as they did from the item's
    return wrapper


def item_type_of(output_type: Any) -> Any:
    """The item type of a decorated function's contract: ``X`` for ``list[X]`` (or any sequence of ``X``), else
    the contract itself."""
    origin = getattr(output_type, "__origin__", None)
    args: tuple[Any, ...] = getattr(output_type, "__args__", ())
    if origin is not None and isinstance(origin, type) and len(args) == 1 and origin is not tuple:
        from collections.abc import Iterable

        if issubclass(origin, Iterable) and not issubclass(origin, (str, bytes, dict)):
            return args[0]
    return output_type


def _members(value: Any) -> list[Any]:
    """The list in a validated answer of :func:`list_contract`."""
    found = value[ITEMS_KEY] if isinstance(value, dict) else getattr(value, ITEMS_KEY)
    return list(found)


# -- reading one streamed try ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Found(Partial):
    """What a streamed try's :class:`ItemReader` hands the driver: the text of list members it finished, the
    first at position ``first`` of that try's answer (never shown to a caller)."""

    texts: tuple[str, ...] = ()
    first: int = 0


class ItemReader:
    """Reads one streamed try's answer (each piece once) and hands over the members of its list as they finish."""

    def __init__(self, send: Send) -> None:
        self.attempt = send.attempt
        self.pieces: Pieces | None = None
        self.spans = ItemSpans(ITEMS_KEY)
        self.read = 0  # pieces read
        self.count = 0  # members handed over

    def __call__(self, accumulator: Accumulator) -> Partial | None:
        pieces = accumulator.answer()
        if pieces is not self.pieces:  # the answer moved (the output tool's call began): read it from the start
            self.pieces, self.spans, self.read, self.count = pieces, ItemSpans(ITEMS_KEY), 0, 0
        parts = pieces.parts
        if self.read == len(parts):
            return None
        texts: list[str] = []
        for part in parts[self.read:]:
            texts.extend(self.spans.feed(part))
        self.read = len(parts)
        if not texts:
            return None
        first, self.count = self.count, self.count + len(texts)
        return Found(None, "", self.attempt, texts=tuple(texts), first=first)


@dataclass(frozen=True)
class _UntilProgress(RetryPolicy):
    """The call's retry policy, except that a try that already yielded items is not sent again as it was: the
    next request continues after them instead (:class:`ListRun`)."""

    inner: RetryPolicy = dataclasses.field(default_factory=RetryPolicy)
    progressed: Callable[[], bool] = lambda: False

    def wait(self, tries: int, failure: Any, deadline: float | None) -> float | None:
        if self.progressed():
            return None
        return self.inner.wait(tries, failure, deadline)


# -- one iteration: the requests, the items, the record ------------------------------------------------------------
class ListRun:
    """The state of one ``create_iterable`` (see the module docstring), without I/O: the drivers
    (:func:`run_items_sync`, :func:`run_items_async`) ask it for each request's :class:`Call` (:meth:`next_call`)
    and hand it what the attempt loop's driver yields (:meth:`take`) or raises (:meth:`failed`)."""

    def __init__(self, item_type: Any, options: CallOptions, make: Callable[[CallOptions], Call]) -> None:
        self.item_type = item_type
        self.options = options
        self.contract = list_contract(item_type)
        # the caller's examples are items (checked as such, so an error names the item); the model answers a list,
        # so it is shown them as one list in that shape
        texts = checked(item_type, options.examples)
        self.examples = ({ITEMS_KEY: [json.loads(text) for text in texts]},) if texts else ()
        self.make = make  # the Call of these options (the structured method's, with the SDK keywords)
        self.items: list[Any] = []
        self.outcomes: list[Outcome] = []
        self.rounds = 0
        self.done = False
        self.started = time.monotonic()
        self.max_attempts = 0  # known once the first call is made (the options', else the client's)
        self.deadline: float | None = None
        self.mode: Mode | None = options.mode
        self.feedback = ""  # why the last request did not finish the list
        self.last_error: CallError | None = None
        self.own: CallError | None = None  # an error raised here (not the attempt loop's)
        self.taken = 0  # items of the current request yielded
        self.stopped: str | None = None  # the problem with the first bad item of the current request
        self.absent_as_null = False
        self.call: Call | None = None  # the latest request's
        self.pending: Call | None = None  # the first request's, made by prepare()
        self.last_raw: str | None = None  # the latest request's answer as it came

    # -- the requests --------------------------------------------------------------------------------------------
    def prepare(self) -> ListRun:
        """Make the first request's call now, so that a mistake in the arguments raises where the stream is made
        (as ``create_partial`` does), not at the first item."""
        self.pending = self.next_call()
        return self

    def next_call(self) -> Call:
        """The next request: the first, or one that continues after the items yielded so far."""
        pending, self.pending = self.pending, None
        if pending is not None:
            return pending
        if self.rounds and self.rounds >= self.max_attempts:
            raise self.gave_up()
        deadline = self.deadline if self.rounds else self.options.deadline  # later requests: the first's
        options = dataclasses.replace(self.options, response_model=self.contract, rules=(), mode=self.mode,
                                      budget=self.budget_left(), deadline=deadline, cache=False,
                                      examples=self.examples)
        call = self.call = self.make(options)
        if not self.rounds:
            self.max_attempts, self.deadline = call.settings.max_attempts, call.deadline
        plan = call.prepared.plans[0]
        self.absent_as_null = plan.absent_as_null
        history = (self.continuation(plan.mode, plan.name),) if self.rounds else ()
        self.rounds += 1
        self.taken, self.stopped = 0, None
        return dataclasses.replace(call, settings=dataclasses.replace(call.settings, max_attempts=1),
                                   history=history, retry=_UntilProgress(inner=call.retry,
                                                                         progressed=lambda: self.taken > 0))

    def continuation(self, mode: str, tool: str) -> Exchange:
        """The turns that continue the list: the items so far, replayed as the model's own answer, and what to do."""
        count = len(self.items)
        if count:
            text = json.dumps({ITEMS_KEY: _as_json(self.items)},
                              ensure_ascii=False)
            kept = f"The {count} items above are kept." if count > 1 else "The 1 item above is kept."
            ask = (f'{kept} Reply with the rest of the list only, in the same shape ({{"{ITEMS_KEY}": [...]}}): '
                   f"the items that come after {f'these {count}' if count > 1 else 'it'}, in order, none of them "
                   f'repeated; {{"{ITEMS_KEY}": []}} when there are no more.')
        else:  # nothing kept: the answer as it came, and the whole list asked for again
            text = self.last_raw or json.dumps({ITEMS_KEY: []})
            ask = (f'No item of it was kept. Reply with the whole list, in the same shape ({{"{ITEMS_KEY}": '
                   f'[...]}}), corrected.')
        is_tool = mode == "tool"
        done = Completion(text, "stop", "stop", Usage(), tool_call_id=f"call_items_{self.rounds}" if is_tool else None,
                          tool_name=tool if is_tool else None)
        return Exchange(done, f"{self.feedback}\n{ask}" if self.feedback else ask)

    def budget_left(self) -> Budget | None:
        """The caller's budget less what the requests so far spent (each request is held to what is left)."""
        budget = self.options.budget
        if budget is None or not self.outcomes:
            return budget
        used = self.usage
        spent_usd = self.outcome().cost_usd if budget.max_usd is not None else None
        return Budget(
            max_tokens=None if budget.max_tokens is None else max(0, budget.max_tokens - used.total_tokens),
            max_cost=None if budget.max_cost is None or budget.price is None
            else max(0.0, budget.max_cost - used.cost(budget.price)),
            price=budget.price,
            max_usd=budget.max_usd if budget.max_usd is None or spent_usd is None
            else max(0.0, budget.max_usd - spent_usd))

    # -- what came back ------------------------------------------------------------------------------------------
    def take(self, item: Partial | Result[Any]) -> list[Any]:
        """The items to yield now, from what the attempt loop's driver yielded: finished members of the answer
        (read and checked here), or the result of the whole answer (its members not yielded yet)."""
        if isinstance(item, Result):
            return self.finished(item)
        if not isinstance(item, Found) or self.stopped is not None:
            return []
        out: list[Any] = []
        for offset, text in enumerate(item.texts):
            position = item.first + offset
            if position != self.taken:  # yielded by an earlier try of this request (or out of step): once only
                continue
            report = self.read(text)
            if report.error is not None:
                self.stopped = (f"Item {len(self.items) + 1} of the list (the one after the items kept; $ is that "
                                f"item) was not valid:\n{_problems(report.error.feedback)}")
                break
            if not self.ruled(report.value):
                break
            out.append(self.accept(report.value))
        return out

    def read(self, text: str) -> Any:
        with validation_context(self.options.context or None):
            return parse_report(text, self.item_type, aliases=self.options.aliases,
                                stages=ABSENT_AS_NULL_STAGES if self.absent_as_null else None)

    def ruled(self, value: Any) -> bool:
        """Whether ``value`` meets the rules; a rule's feedback stops this request, one that ends the call (or
        a non-answer) raises."""
        rules = self.options.rules
        if not rules:
            return True
        verdict = evaluate(rules, value, self.options.context or {})
        if verdict.ok:
            return True
        if verdict.declined is not None:
            self.own = Declined(verdict.declined, value=value, outcome=self.outcome())
            raise self.own
        feedback = semantic_feedback(list(verdict.violations))
        if verdict.end:
            self.own = SemanticRejected(f"item {len(self.items) + 1} broke a rule that ends the call: {feedback}",
                                        outcome=self.outcome())
            raise self.own
        self.stopped = (f"Item {len(self.items) + 1} of the list (the one after the items kept; $ is that item) "
                        f"broke a rule:\n{_problems(feedback)}")
        return False

    def accept(self, value: Any) -> Any:
        self.items.append(value)
        self.taken += 1
        return value

    def finished(self, result: Result[Any]) -> list[Any]:
        """The request's whole answer was valid: the members not yielded yet (held to the rules); the list is
        complete unless one of them (or one read while streaming) failed."""
        self.keep(result)
        members = _members(result.value)
        if _written(members[:self.taken]) != _written(self.items[len(self.items) - self.taken:]):
            # the whole answer's reading took another list than the one read as it streamed (a value after a
            # broken first one): the items yielded are not its; a typed error, never its rest after them
            self.own = GaveUp(f"the answer's list does not begin with the {self.taken} items yielded from it as it "
                              f"streamed (it holds another list after them)", outcome=self.outcome())
            raise self.own
        out: list[Any] = []
        if self.stopped is None:
            for value in members[self.taken:]:
                if not self.ruled(value):
                    break
                out.append(self.accept(value))
        if self.stopped is None:
            self.done = True
        else:
            self.feedback = self.stopped
        return out

    def failed(self, error: CallError) -> None:
        """The request ended without a valid whole answer: go on after the items yielded when it was cut off or
        an item (or the whole) was not valid; else the error ends the iteration, its outcome covering every
        request."""
        if error is self.own:
            raise error
        self.keep(error.outcome)
        cut = isinstance(error, OutputTruncated) or (isinstance(error, VendorUnavailable) and self.taken > 0)
        if not cut and type(error) is not GaveUp:
            error.outcome = self.outcome()
            raise error
        self.last_error = error
        if self.stopped is not None:
            self.feedback = self.stopped
        elif cut:
            self.feedback = "The answer was cut off before the list ended."
        else:
            said = next((a.feedback for a in reversed(error.outcome.attempts) if a.feedback), None)
            self.feedback = said or str(error)

    def keep(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)
        self.last_raw = outcome.raw
        if self.rounds == 1 and outcome.attempts:  # a continued answer is replayed in the mode that began it
            self.mode = cast(Mode, outcome.mode)

    def gave_up(self) -> CallError:
        """The error when the requests ran out before the list was complete: the last request's kind."""
        said = (f"the list was not complete after {self.rounds} requests ({len(self.items)} items yielded): "
                f"{self.feedback}")
        error: CallError
        if isinstance(self.last_error, OutputTruncated):
            error = OutputTruncated(said, outcome=self.outcome())
        elif isinstance(self.last_error, VendorUnavailable):
            error = VendorUnavailable(said, status=self.last_error.status, outcome=self.outcome(),
                                      code=self.last_error.code, snippet=self.last_error.snippet)
        else:
            error = GaveUp(said, outcome=self.outcome())
        return error

    # -- the record ----------------------------------------------------------------------------------------------
    @property
    def usage(self) -> Usage:
        """Tokens of every request so far."""
        total = Usage()
        for outcome in self.outcomes:
            total = total + outcome.usage
        return total

    def outcome(self) -> Outcome:
        """Every request so far as one record: the attempts in order (numbered across requests), usage added up."""
        if not self.outcomes:  # a rule ended the first request while it streamed
            call = self.call
            return Outcome(call.endpoint.provider if call else "", call.model if call else "", self.mode or "", (),
                           Usage(), "", time.monotonic() - self.started, call.prepared.contract.schema_hash
                           if call else "")
        attempts: list[Attempt] = []
        for outcome in self.outcomes:
            for attempt in outcome.attempts:
                attempts.append(dataclasses.replace(attempt, number=len(attempts) + 1))
        first, last = self.outcomes[0], self.outcomes[-1]
        return Outcome(last.provider, last.model, last.mode, tuple(attempts), self.usage, first.trace_id,
                       time.monotonic() - self.started, first.schema_hash, first.compile_report)

    def result(self) -> Result[list[Any]]:
        """The whole list and the record of every request."""
        return result_from(self.outcome(), list(self.items))


def _as_json(items: list[Any]) -> Any:
    """Items as JSON data: what the continuation replays, and what two readings of a list are compared by."""
    return to_jsonable_python(items, by_alias=True, fallback=str)


def _written(items: list[Any]) -> list[Any]:
    """What the model wrote of each item, to compare two readings of one list: a model's fields that were set
    (one a default factory filled, a fresh ``uuid4`` or ``now``, differs between two readings of the same text)."""
    return [item.model_dump(mode="json", by_alias=True, exclude_unset=True, fallback=str)
            if isinstance(item, BaseModel) else to_jsonable_python(item, by_alias=True, fallback=str)
            for item in items]


def _problems(feedback: str) -> str:
    """An item's feedback without its closing "Reply with ..." line: the continuation says what to reply."""
    lines = feedback.splitlines()
    return "\n".join(lines[:-1]) if len(lines) > 1 and lines[-1].startswith("Reply with") else feedback


# -- the drivers -----------------------------------------------------------------------------------------------------
def run_items_sync(run: ListRun, send: Callable[..., Any]) -> Generator[Any, None, None]:
    """The items, request after request, with a synchronous SDK method."""
    while not run.done:
        call = run.next_call()
        with closing(iterate_sync(call, send, previews=ItemReader)) as running:
            try:
                for item in running:
                    yield from run.take(item)
            except CallError as error:
                run.failed(error)


async def run_items_async(run: ListRun, send: Callable[..., Any]) -> AsyncGenerator[Any, None]:
    """The async twin of :func:`run_items_sync`."""
    while not run.done:
        call = run.next_call()
        async with aclosing(iterate_async(call, send, previews=ItemReader)) as running:
            try:
                async for item in running:
                    for value in run.take(item):
                        yield value
            except CallError as error:
                run.failed(error)


class _Items(Generic[T]):
    """What the sync and async streams share: the run, its items so far and, once read to the end, its result."""

    def __init__(self, run: ListRun) -> None:
        self._run = run
        self.result: Result[list[T]] | None = None

    @property
    def items(self) -> list[T]:
        """The items yielded so far, in order."""
        return list(self._run.items)

    @property
    def usage(self) -> Usage:
        """The tokens of every request so far (all of them once the stream is read to the end)."""
        return self._run.usage

    @property
    def value(self) -> list[T]:
        """The whole list, once the stream has been read to the end."""
        if self.result is None:
            raise NotReady("the stream has not been read to the end yet")
        return self.result.value


class ItemStream(_Items[T]):
    """A sync stream of the list's items (``for ticket in stream``); ``.result`` once read to the end."""

    def __init__(self, run: ListRun, send: Callable[..., Any]) -> None:
        super().__init__(run.prepare())
        self._items = run_items_sync(run, send)

    def close(self) -> None:
        """Stop early: end the HTTP stream and the request's span (also done on leaving a ``with`` block)."""
        self._items.close()

    def __enter__(self) -> ItemStream[T]:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def __iter__(self) -> Iterator[T]:
        yield from self._items
        self.result = self._run.result()


class AsyncItemStream(_Items[T]):
    """The async twin of :class:`ItemStream` (``async for``)."""

    def __init__(self, run: ListRun, send: Callable[..., Any]) -> None:
        super().__init__(run.prepare())
        self._items = run_items_async(run, send)

    async def aclose(self) -> None:
        """Stop early (also done on leaving an ``async with`` block)."""
        await self._items.aclose()

    async def __aenter__(self) -> AsyncItemStream[T]:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.aclose()

    async def __aiter__(self) -> AsyncIterator[T]:
        async for item in self._items:
            yield item
        self.result = self._run.result()
