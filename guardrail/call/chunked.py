"""Chunked generation: a list longer than one answer can hold, asked for in parts until the model says it is done.

A long list (thirty video segments with their timings, a catalogue, every clause of a contract) ends in
:class:`~guardrail.errors.OutputTruncated` when one answer cannot hold it. :class:`Chunking` asks for it in
chunks instead. Each chunk is one structured call through the same attempt loop, under a *chunk contract*::

    {"items": [T, ... at most max_items], "done": bool}

so every item is validated against the item contract ``T`` and the model says when the list is over. Each
chunk's request is the caller's prompt plus what the model needs to continue: the items so far as JSON, or,
when they would be too long (``context="auto"`` past ``context_chars``, or ``context="keys"``), their keys and
the last few items. The items are kept in order under a key the caller names (``key="start"``):

* an item whose key was seen before and which is *equal* to the earlier item is a harmless overlap: dropped
  (counted in :attr:`ChunkedResult.dropped`);
* an item whose key was seen before with a *different* value is a conflict, and a ``gap(previous, item)``
  check the caller gives (``True``: something is missing between them) finds a gap; either way the chunk is
  re-asked alone, with feedback saying what was wrong, and the earlier chunks are kept;
* a chunk whose call fails (:class:`~guardrail.errors.CallError`: the attempt loop gave up, the vendor stayed
  unavailable; a chain whose every tier failed) is re-asked alone too, up to ``chunk_attempts`` asks per chunk
  (a spent budget is not re-asked); a refusal or a typed non-answer ends the whole call as it is;
* ``done: false`` with no new item is a stuck model: re-asked like a gap.

Few-shot ``examples=`` are values of the caller's contract (items, or whole lists), checked against it and shown
with every chunk's prompt; the chunk calls themselves get none.

A refusal's (or a typed non-answer's) ``.outcome`` is then the whole call's: every chunk's attempts and usage.

It ends when a chunk says ``done`` and the assembled list passes the caller's list contract (an ``Annotated``
list's ``min_length``, a validator of the whole list) (the :class:`ChunkedResult`, with ``complete`` true), or
with a typed error:
:class:`~guardrail.errors.ChunksExhausted` when ``max_chunks`` chunks came and none said done,
:class:`~guardrail.errors.ChunkRejected` when a chunk kept failing the checks (or the whole list failed the
list contract), or
:class:`~guardrail.errors.ChunkingFailed` (its ``__cause__`` the chunk's own error) when a chunk's call kept
failing. Each carries the items kept so far as ``.items``, for a caller who wants them knowing they are not the
whole list: an incomplete list is never returned as a value. Usage (and so cost) adds up across every chunk and
every failed ask: the result's ``usage`` is the sum, its ``attempts`` every attempt of every chunk.

Three entry points, one I/O-free core (:func:`chunk_loop`, stepped like every protocol of guardrail):

* a wrapped client's ``create_chunked(response_model=Segment, chunking=Chunking(...), messages=[...],
  model=...)`` on every API (the prompt as OpenAI-style ``messages``, as ``Chain.create`` takes it; each chunk's
  request is built with the endpoint's own prompt request);
* ``@guardrail.structured(chunking=Chunking(...))`` on a function returning ``list[Segment]``;
* ``Chain.run_chunked(Segment, chunking=Chunking(...), system=..., user=...)`` (and ``arun_chunked``): each chunk
  walks the chain.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import time
import typing
from collections.abc import Awaitable, Callable, Generator, Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

import pydantic
from pydantic_core import to_jsonable_python

from guardrail.call.examples import checked
from guardrail.errors import (
    BudgetExceeded,
    CallError,
    ChainExhausted,
    ChunkingFailed,
    ChunkRejected,
    ChunksExhausted,
    ConfigError,
    Declined,
    Refused,
    UsageError,
)
from guardrail.outcome import Attempt, Outcome, Result, Usage
from guardrail.store.idempotency import advance
from guardrail.vendors.base import examples_text

if TYPE_CHECKING:
    from guardrail.call.options import CallOptions

__all__ = ["ChunkAsk", "ChunkedResult", "Chunking", "chunk_loop", "chunk_model", "run_chunks", "run_chunks_async"]

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, slots=True)
class Chunking:
    """How to ask for a long list in chunks (see the module docstring).

    Attributes:
        key: what identifies an item: a field name (an attribute, or a key of a plain-JSON item) or a function
            of the item returning a hashable value. Duplicates and conflicts are found by it.
        max_items: the most items one chunk may hold (the chunk contract's ``maxItems``).
        max_chunks: the most chunks asked for (re-asks of a chunk not counted); past it without the model saying
            ``done``, :class:`~guardrail.errors.ChunksExhausted`.
        context: what each chunk's request carries of the items so far: ``"items"`` (all of them, as JSON),
            ``"keys"`` (their keys and the last ``keep_last`` items), ``"auto"`` (the items while their JSON is
            at most ``context_chars`` characters, then the keys and the last items).
        keep_last: how many of the last items the ``"keys"`` context shows in full.
        context_chars: the ``"auto"`` context's threshold.
        gap: ``gap(previous, item) -> bool``, true when items are missing between two consecutive items (for a
            numeric or ordered key: ``lambda a, b: b.start > a.end``); a chunk with a gap is re-asked.
        chunk_attempts: asks per chunk (the first and its re-asks) before the call ends with a typed error.
    """

    key: str | Callable[[Any], Hashable]
    max_items: int = 10
    max_chunks: int = 20
    context: Literal["items", "keys", "auto"] = "auto"
    keep_last: int = 3
    context_chars: int = 6000
    gap: Callable[[Any, Any], bool] | None = None
    chunk_attempts: int = 2

    def __post_init__(self) -> None:
        if self.max_items < 1 or self.max_chunks < 1 or self.chunk_attempts < 1:
            raise ConfigError("Chunking: max_items, max_chunks and chunk_attempts must each be at least 1")
        if self.context not in ("items", "keys", "auto"):
            raise ConfigError(f"Chunking: context must be 'items', 'keys' or 'auto', not {self.context!r}")
        if self.keep_last < 0 or self.context_chars < 0:
            raise ConfigError("Chunking: keep_last and context_chars must be 0 or more")
        if not (isinstance(self.key, str) and self.key) and not callable(self.key):
            raise ConfigError("Chunking: key must be a field name or a function of the item")

    @property
    def key_name(self) -> str:
        """How the prompts and errors name the key."""
        return self.key if isinstance(self.key, str) else "key"

    def key_of(self, item: Any) -> Hashable:
        """The key of ``item`` (an unhashable value stands as its canonical JSON text)."""
        if callable(self.key):
            found: Any = _own(self.key, "key", item)
        elif isinstance(item, Mapping) and self.key in item:
            found = item[self.key]
        elif not isinstance(item, Mapping) and hasattr(item, self.key):
            found = getattr(item, self.key)
        else:
            raise ConfigError(f"Chunking(key={self.key!r}): the items have no field {self.key!r}")
        if isinstance(found, float) and found != found:  # NaN: never equal to itself, so no duplicate would be found
            return "NaN"
        try:
            hash(found)
        except TypeError:
            return json.dumps(to_jsonable_python(found, fallback=str), sort_keys=True, ensure_ascii=False)
        return typing.cast(Hashable, found)


def _own(function: Callable[..., Any], name: str, *items: Any) -> Any:
    """The caller's ``key`` or ``gap`` function on items of an answer; what it raises is a :class:`ConfigError`
    (the function's fault or an item it did not expect; its exception the ``__cause__``), never a builtin."""
    try:
        return function(*items)
    except Exception as error:
        raise ConfigError(f"Chunking({name}=...) raised {type(error).__name__} on an item of the list: "
                          f"{error}") from error


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkedResult(Result[list[T]]):
    """The whole list (``value``) and what making it took, summed over every chunk.

    The :class:`~guardrail.Result` fields are the chunks' together: ``usage`` is the sum of every chunk's usage
    (failed asks included), ``attempts`` every attempt of every chunk in order (so ``cost_usd`` prices them
    all), ``provider``, ``model``, ``mode`` and ``schema_hash`` those of the last chunk, ``trace_id`` the first
    chunk's, ``seconds`` the wall-clock time of the whole call; ``cost_usd`` sums every ask's, each at its own
    provider and model. ``complete`` is always true on a result (an
    incomplete list is an error, never a result); ``chunks`` holds each accepted chunk's own record (a
    :class:`~guardrail.Result`, or a :class:`~guardrail.chain.tiers.ChainResult` through a chain), ``asks`` how
    many chunk requests were made in all (re-asks included), ``dropped`` how many overlapping duplicates were
    dropped.
    """

    chunks: tuple[Any, ...] = ()
    asks: int = 0
    dropped: int = 0
    complete: bool = True
    #: The record of every ask (accepted, rejected or failed; every failed tier's through a chain), in order.
    parts: tuple[Outcome, ...] = ()

    @property
    def cost_usd(self) -> float | None:
        """What every ask cost in US dollars, each priced at its own provider and model (a chain's chunks may
        come from different vendors); ``None`` when any price is unknown."""
        total = 0.0
        for part in self.parts:
            cost = part.cost_usd
            if cost is None:
                return None
            total += cost
        return total


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkAsk:
    """Effect of :func:`chunk_loop`: make one chunk's structured call with this prompt and these options (the
    chunk contract as ``response_model``, the budget the earlier chunks left)."""

    number: int
    system: str
    user: str
    options: CallOptions


@dataclasses.dataclass(frozen=True, slots=True)
class ChunkAnswer:
    """What a driver sends back for a :class:`ChunkAsk`: the validated chunk, the records that made it (for the
    usage), and the record to keep on :attr:`ChunkedResult.chunks`."""

    value: Any
    outcomes: tuple[Outcome, ...]
    record: Any


def item_type(response_model: Any) -> Any:
    """The item contract of a chunked call: ``T`` for ``list[T]`` (or ``Sequence[T]``...), else the type itself."""
    inner = response_model
    while typing.get_origin(inner) is Annotated:  # Annotated[list[T], Field(min_length=...)]: still a list of T
        inner = typing.get_args(inner)[0]
    origin, args = typing.get_origin(inner), typing.get_args(inner)
    if origin is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        raise UsageError("chunked generation assembles a list of one item type; a fixed tuple such as "
                         f"{response_model!r} is not one")
    if origin in (list, tuple, Sequence) and args:
        return args[0]
    return response_model


@functools.lru_cache(maxsize=128)
def _chunk_model(item: Any, max_items: int) -> type[pydantic.BaseModel]:
    items: Any = Annotated[list[item], pydantic.Field(
        max_length=max_items, description=f"the next items of the list, at most {max_items}, in order")]
    done: Any = Annotated[bool, pydantic.Field(
        description="true when these items end the whole list (nothing is left to give), else false")]
    fields: dict[str, Any] = {"items": (items, ...), "done": (done, ...)}
    return pydantic.create_model("Chunk", **fields)


def chunk_model(response_model: Any, max_items: int) -> type[pydantic.BaseModel]:
    """The chunk contract for items of ``response_model`` (``T`` or ``list[T]``): ``{"items": [T, ...],
    "done": bool}`` with at most ``max_items`` items, made once per item type and size."""
    item = item_type(response_model)
    try:
        return _chunk_model(item, max_items)
    except (pydantic.PydanticUserError, TypeError, AttributeError):  # a dict, a Regex/Grammar, no type at all
        raise UsageError(f"chunked generation needs the item contract as a type (a pydantic model, a dataclass, "
                         f"a TypedDict...), not {item!r}; a JSON Schema dict can be turned into one with "
                         "guardrail.JsonSchema, and a Regex or Grammar answer is one text, asked with create()"
                         ) from None


# -- the I/O-free core ------------------------------------------------------------------------------------------
def _dump(items: Sequence[Any]) -> str:
    return json.dumps(to_jsonable_python(list(items), fallback=str), ensure_ascii=False, separators=(",", ":"))


def continuation(chunking: Chunking, items: Sequence[Any], number: int) -> str:
    """What a chunk's request adds to the caller's prompt: the chunk contract's rules and the items so far."""
    head = (f"The answer is a list too long for one reply, so it is asked for in parts; this is part {number}. "
            f"Give at most {chunking.max_items} items in \"items\", continuing the list in order where the items "
            "so far end and repeating none of them. Set \"done\" to true when the items you give end the whole "
            "list (an empty \"items\" with \"done\": true when nothing is left), else false.")
    if not items:
        return f"{head}\nNo items so far: start at the beginning of the list."
    whole = _dump(items)
    if chunking.context == "items" or (chunking.context == "auto" and len(whole) <= chunking.context_chars):
        return f"{head}\nThe items so far ({len(items)}):\n{whole}"
    keys = json.dumps(to_jsonable_python([chunking.key_of(item) for item in items], fallback=str),
                      ensure_ascii=False, separators=(",", ":"))
    last = _dump(items[-chunking.keep_last:]) if chunking.keep_last else "[]"
    return (f"{head}\nThere are {len(items)} items so far. Their {chunking.key_name} values, in order:\n{keys}\n"
            f"The last {min(chunking.keep_last, len(items))} of them in full:\n{last}")


def merge(chunking: Chunking, kept: Sequence[Any], seen: Mapping[Hashable, Any],
          new: Sequence[Any]) -> tuple[list[Any], int, list[str]]:
    """A chunk's items against the items kept so far: (the new items, in order; how many equal duplicates were
    dropped; the problems, each a line for the model: a conflicting duplicate, a gap)."""
    fresh: list[Any] = []
    local: dict[Hashable, Any] = {}
    dropped = 0
    problems: list[str] = []
    last = kept[-1] if kept else None
    for item in new:
        key = chunking.key_of(item)
        earlier = local.get(key, seen.get(key, _MISSING))
        if earlier is not _MISSING:
            if earlier == item:
                dropped += 1
            else:
                problems.append(f"the item with {chunking.key_name} {key!r} differs from the earlier item with the "
                                f"same {chunking.key_name}: give each item once, as it was given before")
            continue
        if chunking.gap is not None and last is not None and _own(chunking.gap, "gap", last, item):
            problems.append(f"items are missing between the item with {chunking.key_name} "
                            f"{chunking.key_of(last)!r} and the one with {key!r}: continue without leaving any out")
        fresh.append(item)
        local[key] = item
        last = item
    return fresh, dropped, problems


_MISSING: Any = object()

#: Chunk errors that are answers, not faults: they end the whole call as they are, never re-asked.
_ANSWERS: tuple[type[CallError], ...] = (Refused, Declined)


def _spent(error: BaseException) -> list[Outcome]:
    """The records of what a failed chunk call cost (a CallError's outcome, every failed tier's of a chain)."""
    if isinstance(error, CallError):
        return [error.outcome]
    if isinstance(error, ChainExhausted):
        return [d.error.outcome for d in error.departures if isinstance(d.error, CallError)]
    return []


def _total(outcomes: Sequence[Outcome], started: float) -> tuple[str, str, str, tuple[Attempt, ...], Usage, str,
                                                                   float, str]:
    """The fields of an :class:`Outcome` summing ``outcomes`` (see :class:`ChunkedResult`)."""
    usage = Usage()
    attempts: list[Attempt] = []
    for outcome in outcomes:
        usage = usage + outcome.usage
        attempts.extend(outcome.attempts)
    last = outcomes[-1] if outcomes else Outcome("", "", "", (), Usage(), "", 0.0, "")
    first = outcomes[0] if outcomes else last
    return (last.provider, last.model, last.mode, tuple(attempts), usage, first.trace_id,
            time.monotonic() - started, last.schema_hash)


def _budget_left(options: CallOptions, used: Usage, spent: float | None) -> CallOptions:
    if options.budget is None:
        return options
    return dataclasses.replace(options, budget=options.budget.after(used, spent))


def chunk_loop(chunking: Chunking, system: str, user: str,
               options: CallOptions) -> Generator[ChunkAsk, ChunkAnswer, ChunkedResult[Any]]:
    """The chunked call without I/O: yields each chunk's :class:`ChunkAsk` and is sent its :class:`ChunkAnswer`
    (or thrown the chunk call's exception); returns the :class:`ChunkedResult` or raises a typed error (see the
    module docstring). ``options`` are the caller's, with the list's (or the item's) type as ``response_model``."""
    if options.rules:
        raise UsageError("semantic rules judge one whole answer; a chunked call's answers are parts of a list, so "
                         "check the assembled list yourself (rules= cannot be combined with chunking=)")
    model = chunk_model(options.response_model, chunking.max_items)
    # Few-shot examples are values of the caller's contract (an item, or a list), not chunks: checked against it
    # and shown with the prompt; the chunk calls get none (they would be checked against the chunk contract).
    shown = checked(options.response_model, options.examples)
    if shown:
        what = "items" if item_type(options.response_model) is options.response_model else "whole lists"
        user = f"{user}\n\n{examples_text(shown, what)}"
    asked = dataclasses.replace(options, response_model=model, examples=())
    started = time.monotonic()
    kept: list[Any] = []
    seen: dict[Hashable, Any] = {}
    outcomes: list[Outcome] = []
    records: list[Any] = []
    dropped = asks = 0
    spent: float | None = 0.0

    def failed(error_type: type[ChunkingFailed], message: str, **extra: Any) -> ChunkingFailed:
        outcome = Outcome(*_total(outcomes, started))
        return error_type(message, outcome=outcome, items=list(kept), chunks=tuple(records), **extra)

    def paid(new: Sequence[Outcome]) -> None:
        """Count what an ask cost (a dollar cap needs the dollars; an unknown price leaves none)."""
        nonlocal spent
        outcomes.extend(new)
        if options.budget is not None and options.budget.max_usd is not None:
            for outcome in new:
                cost = None if spent is None else outcome.cost_usd
                spent = None if cost is None or spent is None else spent + cost

    for number in range(1, chunking.max_chunks + 1):
        feedback = ""
        for ask_number in range(1, chunking.chunk_attempts + 1):
            asks += 1
            text = f"{user}\n\n{continuation(chunking, kept, number)}{feedback}"
            used = Usage()
            for outcome in outcomes:
                used = used + outcome.usage
            try:
                answer = yield ChunkAsk(number, system, text, _budget_left(asked, used, spent))
            except _ANSWERS as error:  # ends the call as it is, its outcome the whole call's (earlier chunks' usage)
                paid(_spent(error))
                error.outcome = Outcome(*_total(outcomes, started))
                raise
            except (CallError, ChainExhausted) as error:
                paid(_spent(error))
                if ask_number == chunking.chunk_attempts or isinstance(error, BudgetExceeded):  # no use asking again
                    raise failed(ChunkingFailed, f"chunk {number} failed {ask_number} times; {len(kept)} items "
                                 f"were kept before it: {error}") from error
                feedback = ""
                continue
            paid(answer.outcomes)
            items = list(answer.value.items)
            done = bool(answer.value.done)
            fresh, duplicates, problems = merge(chunking, kept, seen, items)
            if not fresh and not done and not problems:
                problems.append("the answer added no new item and did not say \"done\": give the next items, or "
                                "\"done\": true if the list is complete")
            if problems:
                if ask_number == chunking.chunk_attempts:
                    raise failed(ChunkRejected, f"chunk {number} was rejected {ask_number} times: "
                                 + "; ".join(problems), problems=tuple(problems))
                feedback = ("\n\nYour previous answer for this part could not be used:\n- " + "\n- ".join(problems))
                continue
            kept.extend(fresh)
            for item in fresh:
                seen[chunking.key_of(item)] = item
            dropped += duplicates
            records.append(answer.record)
            if done:
                whole = _whole(options.response_model, kept, options.context)
                if isinstance(whole, str):
                    raise failed(ChunkRejected, f"the assembled list of {len(kept)} items is not a value of the "
                                 f"contract: {whole}", problems=(whole,))
                kept[:] = whole
                fields = _total(outcomes, started)
                cached = bool(records) and all(getattr(r, "cached", False) for r in records)
                return ChunkedResult(*fields, None, list(kept), cached, chunks=tuple(records), asks=asks,
                                     dropped=dropped, complete=True, parts=tuple(outcomes))
            break
    raise failed(ChunksExhausted, f"{chunking.max_chunks} chunks gave {len(kept)} items and none said the list "
                 "was done: raise max_chunks or max_items (the items so far are on .items; they are not the whole "
                 "list)")


def _whole(response_model: Any, items: list[Any], context: Any = None) -> list[Any] | str:
    """The assembled list checked against the caller's list contract (its own constraints, such as a
    ``min_length`` or a validator of the whole list, see all of it only now): the validated list, or what is
    wrong with it (the call's ``context`` is the validators' ``info.context``). An item contract (not a list)
    has nothing more to check."""
    if item_type(response_model) is response_model:
        return items
    try:
        value = pydantic.TypeAdapter(response_model).validate_python(items, context=context or None)
    except pydantic.ValidationError as error:
        listed = error.errors()
        return f"{listed[0]['msg']} at {list(listed[0]['loc'])}" if listed else str(error)
    except Exception as error:  # a validator of the list raising what pydantic does not wrap: still a no
        return f"a validator of the list raised {type(error).__name__}: {error}"
    return list(value)


# -- the drivers ------------------------------------------------------------------------------------------------
def run_chunks(chunking: Chunking, system: str, user: str, options: CallOptions,
               ask: Callable[[ChunkAsk], ChunkAnswer]) -> ChunkedResult[Any]:
    """Step :func:`chunk_loop` in this thread: ``ask`` makes one chunk's call."""
    loop = chunk_loop(chunking, system, user, options)
    reply: tuple[Any, BaseException | None] = (None, None)
    while True:
        finished, step = advance(loop, reply)
        if finished:
            return typing.cast(ChunkedResult[Any], step)
        try:
            reply = (ask(step), None)
        except Exception as error:  # thrown into the core: re-asked, or an answer that ends the call
            reply = (None, error)


async def run_chunks_async(chunking: Chunking, system: str, user: str, options: CallOptions,
                           ask: Callable[[ChunkAsk], Awaitable[ChunkAnswer]]) -> ChunkedResult[Any]:
    """The async :func:`run_chunks`: ``ask`` returns an awaitable of the chunk's answer."""
    loop = chunk_loop(chunking, system, user, options)
    reply: tuple[Any, BaseException | None] = (None, None)
    while True:
        finished, step = advance(loop, reply)
        if finished:
            return typing.cast(ChunkedResult[Any], step)
        try:
            reply = (await ask(step), None)
        except Exception as error:
            reply = (None, error)


def from_result(result: Result[Any]) -> ChunkAnswer:
    """A wrapped call's :class:`~guardrail.Result` as a chunk's answer."""
    return ChunkAnswer(result.value, (result,), result)


def from_chain(result: Any) -> ChunkAnswer:
    """A chain's :class:`~guardrail.chain.tiers.ChainResult` as a chunk's answer: the tier's record and every
    failed tier's (their usage counts). A degraded chunk (a rule engine's or safe default's) is not a part of the
    list the model wrote, so it fails the chunk."""
    outcomes = [d.error.outcome for d in result.departures if isinstance(d.error, CallError)]
    if result.degraded:  # the failed tiers' usage travels on the error, which the core counts
        raise ChunkingFailed(f"a chunk came from the degraded tier {result.tier!r}, not from a model: the list "
                             "cannot be assembled from it", outcome=Outcome(*_total(outcomes, time.monotonic())),
                             items=[], chunks=())
    if isinstance(result.detail, Outcome):
        outcomes.append(result.detail)
    return ChunkAnswer(result.value, tuple(outcomes), result)


# -- the wrapped client's create_chunked ---------------------------------------------------------------------------
def _prompt(kwargs: dict[str, Any]) -> tuple[str, str]:
    """Take the prompt out of a ``create_chunked`` call's keywords: OpenAI-style ``messages`` (any API), plus a
    ``system``/``instructions`` text and an ``input``/``contents`` text where the API names them so."""
    from guardrail.vendors.openai_chat import split_messages

    messages = kwargs.pop("messages", None) or ()
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or \
            not all(isinstance(m, Mapping) for m in messages):
        raise UsageError("create_chunked() takes the prompt as messages=[{\"role\": ..., \"content\": ...}, ...]")
    system, user = split_messages(messages)
    for name in ("system", "instructions"):
        if isinstance(kwargs.get(name), str):
            system = "\n".join(part for part in (kwargs.pop(name), system) if part)
    for name in ("input", "contents"):
        if isinstance(kwargs.get(name), str):
            user = "\n".join(part for part in (user, kwargs.pop(name)) if part)
    if not user:
        raise UsageError("create_chunked() needs a prompt: messages= with a user message")
    return system, user


class ChunkedCreate:
    """The ``create_chunked`` method of a wrapped client's structured resources (sync)."""

    @typing.overload
    def create_chunked(self, *, chunking: Chunking, response_model: type[list[T]],
                       **kwargs: Any) -> ChunkedResult[T]: ...
    @typing.overload
    def create_chunked(self, *, chunking: Chunking, response_model: type[T], **kwargs: Any) -> ChunkedResult[T]: ...
    def create_chunked(self, *, chunking: Chunking, **kwargs: Any) -> ChunkedResult[Any]:
        """A list in chunks (:mod:`guardrail.call.chunked`): ``response_model`` is the item (or ``list[item]``),
        ``messages`` the prompt (OpenAI-style on every API), the other keywords guardrail's and the SDK's, sent
        with every chunk. Returns the :class:`ChunkedResult` (the whole list as ``.value``)."""
        resource: Any = self
        options, system, user, request = _chunked_call(resource, chunking, kwargs)
        return run_chunks(chunking, system, user, options,
                          lambda ask: from_result(resource._guardrail_run(ask.options, request(ask))))


class AsyncChunkedCreate:
    """The ``create_chunked`` method of a wrapped async client's structured resources."""

    @typing.overload
    async def create_chunked(self, *, chunking: Chunking, response_model: type[list[T]],
                             **kwargs: Any) -> ChunkedResult[T]: ...
    @typing.overload
    async def create_chunked(self, *, chunking: Chunking, response_model: type[T],
                             **kwargs: Any) -> ChunkedResult[T]: ...
    async def create_chunked(self, *, chunking: Chunking, **kwargs: Any) -> ChunkedResult[Any]:
        """The async :meth:`ChunkedCreate.create_chunked`."""
        resource: Any = self
        options, system, user, request = _chunked_call(resource, chunking, kwargs)

        async def ask(step: ChunkAsk) -> ChunkAnswer:
            return from_result(await resource._guardrail_run(step.options, request(step)))

        return await run_chunks_async(chunking, system, user, options, ask)


def _chunked_call(resource: Any, chunking: Chunking, kwargs: dict[str, Any]
                  ) -> tuple[CallOptions, str, str, Callable[[ChunkAsk], dict[str, Any]]]:
    """The options, the prompt and each chunk's SDK keywords of a ``create_chunked`` call."""
    from guardrail.call.options import CallOptions

    if not isinstance(chunking, Chunking):
        raise UsageError("create_chunked() takes chunking=Chunking(key=..., max_items=...)")
    options = CallOptions.take(kwargs, "create_chunked")
    if options is None:
        raise UsageError("create_chunked() missing 1 required keyword-only argument: 'response_model'")
    system, user = _prompt(kwargs)
    endpoint = resource.endpoint
    max_tokens = endpoint.max_tokens(kwargs)
    kwargs.pop(endpoint.max_tokens_key, None)

    def request(ask: ChunkAsk) -> dict[str, Any]:
        return _merged(kwargs, endpoint.prompt_request(ask.system, ask.user, max_tokens=max_tokens))

    return options, system, user, request


def _merged(given: Mapping[str, Any], prompt: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's SDK keywords with a chunk's prompt request over them; a keyword both give as a mapping (a
    ``config`` holding the system text and the caller's settings) is merged, the prompt's entries winning."""
    out = {**given, **prompt}
    for name, value in prompt.items():
        if isinstance(value, Mapping) and isinstance(given.get(name), Mapping):
            out[name] = {**given[name], **value}
    return out


# -- the decorator's and the chain's ----------------------------------------------------------------------------
def chain_chunked(chain: Any, request: Any, chunking: Chunking, asynchronous: bool = False) -> Any:
    """A chain's chunked run for a :class:`~guardrail.chain.tiers.Request` whose contract is the list (or item):
    each chunk walks the chain. The :class:`ChunkedResult` (an awaitable of it when ``asynchronous``)."""

    def chunk_request(ask: ChunkAsk) -> Any:
        return dataclasses.replace(request, system=ask.system, user=ask.user, options=ask.options)

    if asynchronous:
        async def ask(step: ChunkAsk) -> ChunkAnswer:
            return from_chain(await chain._arun(chunk_request(step)))

        return run_chunks_async(chunking, request.system, request.user, request.options, ask)
    return run_chunks(chunking, request.system, request.user, request.options,
                      lambda step: from_chain(chain._run(chunk_request(step))))


def function_chunked(function: Any, chunking: Chunking, chain: Any, config: Any, args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
    """A ``@structured(chunking=...)`` function's call: through its chain, else its wrapped client's method;
    the :class:`ChunkedResult` (an awaitable of it for an ``async def``)."""
    asynchronous: bool = function._is_async
    if chain is not None:
        system, user, arguments = function._prompt_parts(args, kwargs)
        context = function._context() if callable(function._context) else function._context
        cached = function._overrides.get("cache") is not False
        request = chain._request(function.output_type, system, user, arguments, context, function._rules,
                                 function._version, cached, function._examples)
        return chain_chunked(chain, request, chunking, asynchronous)
    method, options, sdk = function._request(args, kwargs, config)
    system, user, _ = function._prompt_parts(args, kwargs)
    endpoint = method.endpoint

    def chunk_sdk(ask: ChunkAsk) -> dict[str, Any]:
        return {**sdk, **endpoint.prompt_request(ask.system, ask.user, max_tokens=config.max_tokens)}

    if asynchronous:
        async def ask(step: ChunkAsk) -> ChunkAnswer:
            return from_result(await method._guardrail_run(step.options, chunk_sdk(step)))

        return run_chunks_async(chunking, system, user, options, ask)
    return run_chunks(chunking, system, user, options,
                      lambda step: from_result(method._guardrail_run(step.options, chunk_sdk(step))))
