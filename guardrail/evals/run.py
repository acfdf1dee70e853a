"""Running the experiment matrix: every case under every mode x model, concurrently, resumable.

Each case is one structured call through a wrapped client (``create_with_result`` with the contract, the mode,
the rules and the prompt version), and becomes one :class:`CaseResult`: how it ended (``clean``,
``locally_repaired``, ``reasked`` or ``failed``), what it cost (HTTP requests, tokens, dollars, seconds), the
semantic rejections on the way, whether the value is empty, and how it compares with the case's ``expected``.

A ``--function`` case runs a decorated function instead (:mod:`.function`), a ``local`` run a local model
(:mod:`.local`); both are judged by the same :func:`judge_case`. A run-wide budget (:mod:`.budget`) stops
starting cases once it is spent; the cases it leaves are ``skipped_budget`` results.

Results are appended to a state file (JSONL) as each case finishes, so an interrupted run (Ctrl-C) keeps what it
did, and a run with ``resume`` skips every (mode, model, case) the state file already holds.
"""

from __future__ import annotations

import json
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from guardrail.call.client import structured_method, wrap
from guardrail.contract import compile_contract
from guardrail.errors import CallError, CommandError, GuardrailError, SemanticViolation, UsageError
from guardrail.evals.budget import RunBudget
from guardrail.evals.cases import Case
from guardrail.gates.semantic import Rule
from guardrail.observe.redact import redact, redact_text
from guardrail.outcome import Budget, Outcome, Result
from guardrail.replay.record import value_json
from guardrail.vendors.openai_chat import split_messages

__all__ = ["AUTO", "SKIPPED_BUDGET", "VALID", "CaseResult", "judge_case", "matrix_runs", "read_state", "run_matrix"]

#: The mode label of a run that lets guardrail choose the mode (the strongest the model supports).
AUTO = "auto"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """What one case came to under one mode and model (one line of the state file).

    ``outcome`` is ``clean`` (valid, first answer, no repair), ``locally_repaired`` (valid after local fixes, no
    re-ask), ``reasked`` (valid after one re-ask or more), ``failed`` (no value; ``failure`` is the error's kind)
    or ``skipped_budget`` (not run: the run-wide budget was spent; never in the state file).
    ``rejections`` counts the semantic rules each answer broke, by rule. ``empty`` says the value holds no content
    (every string, list and object in it empty, every leaf null). ``exact``/``fields`` compare the value with the
    case's ``expected`` (``None`` without one).
    """

    mode: str
    model: str
    case: str
    slice: str | None
    outcome: str
    failure: str | None
    vendor_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    seconds: float
    rejections: dict[str, int] = field(default_factory=dict)
    empty: bool = False
    exact: bool | None = None
    fields: dict[str, bool] | None = None
    value: Any = None
    #: Drifted field names the parse layer renamed (``[before, after]``, case drift only: aliases are already
    #: known), and per fix kind ``[answers carrying it, of which accepted]``, over every attempt.
    renames: list[list[str]] = field(default_factory=list)
    repairs: dict[str, list[int]] = field(default_factory=dict)
    #: The last raw output received (secrets redacted, at most :data:`RAW_CHARS` characters), for the worst cases.
    raw: str | None = None

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.mode, self.model, self.case)

    @property
    def valid(self) -> bool:
        return self.outcome in VALID

    @property
    def ran(self) -> bool:
        """False for a case the run-wide budget left unstarted (``skipped_budget``)."""
        return self.outcome != SKIPPED_BUDGET


#: The outcomes of a case that gave a value.
VALID = frozenset({"clean", "locally_repaired", "reasked"})
#: The outcome of a case the run-wide budget left unstarted: not run, not in the state file (``--resume`` runs it).
SKIPPED_BUDGET = "skipped_budget"


def judge_case(case: Case, mode: str, model: str, contract: Any, outcome: Outcome | None, value: Any,
               error: BaseException | None) -> CaseResult:
    """The :class:`CaseResult` of a case's call: its outcome (a :class:`Result` or the error's ``.outcome``;
    ``None`` when the call failed before any request) and value, or its error."""
    attempts = outcome.attempts if outcome is not None else ()
    answered = [a for a in attempts if a.raw is not None or a.finish_reason is not None]
    rejections: Counter[str] = Counter()
    renames: list[list[str]] = []
    repairs: dict[str, list[int]] = {}
    for attempt in attempts:
        if isinstance(attempt.error, SemanticViolation):
            rejections.update(attempt.error.rules)
        for repair in {fix.kind for fix in attempt.fixes if fix.kind != "null_as_absent"}:
            seen = repairs.setdefault(repair, [0, 0])
            seen[0] += 1
            seen[1] += 1 if attempt.error is None else 0
        renames.extend([str(fix.before), str(fix.after)] for fix in attempt.fixes if fix.kind == "case_drift")
    failure = None
    data = None
    if error is not None:
        named = getattr(error, "kind", None)
        failure = named if isinstance(named, str) else type(error).__name__
        result = "failed"
    else:
        data = value_json(compile_contract(contract), value)
        if len(answered) > 1:
            result = "reasked"
        elif attempts and any(fix.kind != "null_as_absent" for fix in attempts[-1].fixes):  # not guardrail's own
            result = "locally_repaired"
        else:
            result = "clean"
    exact: bool | None = None
    fields: dict[str, bool] | None = None
    if case.has_expected:
        exact = error is None and data == case.expected
        if isinstance(case.expected, Mapping):
            fields = {str(name): error is None and isinstance(data, Mapping) and name in data and data[name] == want
                      for name, want in case.expected.items()}
    usage = outcome.usage if outcome is not None else None
    return CaseResult(mode, model, case.id, case.slice, result, failure,
                      outcome.vendor_calls if outcome is not None else 0,
                      usage.input_tokens if usage else 0, usage.output_tokens if usage else 0,
                      outcome.cost_usd if outcome is not None and outcome.vendor_calls else 0.0,  # none sent
                      outcome.seconds if outcome is not None else 0.0, dict(rejections),
                      error is None and _empty(data), exact, fields, redact(data), renames, repairs,
                      _clip(outcome.raw if outcome is not None else None))


#: Characters of the last raw output a case result keeps.
RAW_CHARS = 2000


def _clip(raw: str | None) -> str | None:
    return None if raw is None else redact_text(raw[:RAW_CHARS])


def _empty(data: Any) -> bool:
    """Whether a JSON value holds no content: every leaf null, every string, list and object empty."""
    if data is None or data == "":
        return True
    if isinstance(data, Mapping):
        return all(_empty(item) for item in data.values())
    if isinstance(data, list):
        return all(_empty(item) for item in data)
    return False


def _call(client: Any, api: str | None, case: Case, mode: str, model: str, contract: Any, rules: Sequence[Rule],
          prompt_version: str | None, max_tokens: int | None) -> CaseResult:
    """Run one case and judge it; an error that is not guardrail's (a bug) propagates."""
    method = structured_method(client, api)
    endpoint = method.endpoint
    if endpoint.api == "chat" and max_tokens is None:  # the case's messages as they are
        request: dict[str, Any] = {"messages": list(case.messages)}
    else:  # another wire format: the system and user text, in it
        system, user = split_messages(case.messages)
        request = endpoint.prompt_request(system, user, max_tokens=max_tokens)
    try:
        with_result = getattr(method, endpoint.methods.result)  # create_with_result; Gemini's generate_content_...
        result: Result[Any] = with_result(
            model=model, response_model=contract, mode=None if mode == AUTO else mode, rules=list(rules),
            prompt_version=prompt_version, **request)
    except CallError as error:
        return judge_case(case, mode, model, contract, error.outcome, None, error)
    except GuardrailError as error:  # before any request: a mode the model cannot use, a price unknown...
        return judge_case(case, mode, model, contract, None, None, error)
    return judge_case(case, mode, model, contract, result, result.value, None)


def read_state(path: str | os.PathLike[str]) -> list[CaseResult]:
    """The case results a state file holds (lines that are not one, such as a line cut short, are left out)."""
    found: list[CaseResult] = []
    location = Path(path)
    if not location.exists():
        return found
    with location.open(encoding="utf-8") as lines:
        for text in lines:
            try:
                found.append(CaseResult(**json.loads(text)))
            except (ValueError, TypeError):
                continue
    return found


def run_matrix(client: Any, cases: Sequence[Case], contract: Any = None, *, models: Sequence[str] = (),
               modes: Sequence[str] = (AUTO,), api: str | None = None, rules: Sequence[Rule] = (),
               prompt_version: str | None = None, max_tokens: int | None = None, concurrency: int = 4,
               state: str | os.PathLike[str] | None = None, resume: bool = False,
               progress: Callable[[int, int], None] | None = None, function: Any = None, local_model: Any = None,
               local_name: str = "local", budget: Budget | None = None) -> list[CaseResult]:
    """Every case under every mode x model, ``concurrency`` calls at a time, through the wrapped ``client``.

    ``function`` (a ``@guardrail.structured`` function) runs ``{"input": ...}`` cases through it instead: its
    contract, prompt and rules are its own, each run sets its model and mode (:mod:`.function`). The mode
    ``local`` is one run through the :class:`~guardrail.local.LocalModel` ``local_model``, reported as model
    ``local_name`` (:mod:`.local`). ``budget`` (``max_tokens`` and/or ``max_usd``) bounds the whole run
    (:mod:`.budget`): once what the finished cases spent reaches it, no case starts, and each case left is a
    ``skipped_budget`` result (never written to the state file, so ``resume`` runs it later). Cases start case by
    case across the runs, so a cut leaves every run with the same cases done.

    With ``state``, each result is appended there as it finishes; with ``resume``, the results already there are
    kept and their cases not run again. Returns every result (kept and new), in matrix order. On Ctrl-C the calls
    in flight finish, the rest are cancelled, and ``KeyboardInterrupt`` propagates (the state file holds what was
    done). ``progress(done, total)`` is called after each case.
    """
    runs = matrix_runs(modes, models, local_name)
    worker = _worker(client, cases, contract, runs, api=api, rules=rules, prompt_version=prompt_version,
                     max_tokens=max_tokens, function=function, local_model=local_model)
    kept: dict[tuple[str, str, str], CaseResult] = {}
    if resume and state is not None:
        kept = {result.key: result for result in read_state(state)}
        _end_line(state)
    todo = [(mode, model, case) for case in cases for mode, model in runs if (mode, model, case.id) not in kept]
    total = len(runs) * len(cases)
    done = total - len(todo)
    lock = threading.Lock()
    results: dict[tuple[str, str, str], CaseResult] = dict(kept)
    gate = RunBudget(budget) if budget is not None else None

    def finished(result: CaseResult) -> None:
        nonlocal done
        with lock:
            results[result.key] = result
            done += 1
            if gate is not None:
                gate.add(result.input_tokens, result.output_tokens, result.cost_usd)
            if state is not None:
                _append(state, result)
            if progress is not None:
                progress(done, total)

    def allowed() -> Iterable[tuple[str, str, Case]]:
        for item in todo:
            with lock:
                if gate is not None and gate.spent():
                    return
            yield item

    if progress is not None:
        progress(done, total)
    _run_all(allowed(), max(1, concurrency), lambda item: worker(*item), finished)
    for mode, model, case in todo:  # what the budget left unstarted
        results.setdefault((mode, model, case.id), CaseResult(mode, model, case.id, case.slice, SKIPPED_BUDGET,
                                                              None, 0, 0, 0, 0.0, 0.0))
    return [results[(mode, model, case.id)] for mode, model in runs for case in cases]


def matrix_runs(modes: Sequence[str], models: Sequence[str], local_name: str = "local") -> list[tuple[str, str]]:
    """The (mode, model) runs of the matrix: every mode x model, and the ``local`` mode once, with the local
    model's name."""
    from guardrail.evals.local import LOCAL

    runs: list[tuple[str, str]] = []
    for mode in dict.fromkeys(modes):
        if mode == LOCAL:
            runs.append((LOCAL, local_name))
        else:
            if not models:
                raise UsageError(f"the mode {mode!r} needs a model to call (models=..., --model)")
            runs.extend((mode, model) for model in dict.fromkeys(models))
    if not runs:
        raise UsageError("no run: give at least one mode")
    return runs


def _worker(client: Any, cases: Sequence[Case], contract: Any, runs: Sequence[tuple[str, str]], *,
            api: str | None, rules: Sequence[Rule], prompt_version: str | None, max_tokens: int | None,
            function: Any, local_model: Any) -> Callable[[str, str, Case], CaseResult]:
    """What runs one (mode, model, case), checked before any case runs: a case through the wrapped client, the
    decorated function, or the local model."""
    from guardrail.evals.local import LOCAL, local_case

    local = any(mode == LOCAL for mode, _ in runs)
    if local and local_model is None:
        raise UsageError("the local mode needs a local model (local_model=..., --local-model PATH_OR_ID)")
    if function is not None:
        from guardrail.evals.function import bind_inputs, function_case, structured_function

        chosen = structured_function(function, getattr(function, "__qualname__", "function"))
        if rules:
            raise UsageError("a decorated function carries its own rules (@guardrail.structured(rules=...)); "
                         "--rules is for messages cases")
        arguments = bind_inputs(chosen, cases)
        variants = {(mode, model): chosen.using(client=local_model, max_tokens=max_tokens) if mode == LOCAL else
                    chosen.using(client=client, api=api, model=model, mode=None if mode == AUTO else mode,
                                 max_tokens=max_tokens)
                    for mode, model in runs}
        return lambda mode, model, case: function_case(variants[(mode, model)], arguments[case.id], case, mode,
                                                       model, local=mode == LOCAL)
    if contract is None:
        raise UsageError("messages cases need a contract (--contract MODULE:Type or a JSON Schema file)")
    lacking = [case.id for case in cases if not case.messages]
    if lacking:
        raise CommandError(f"case {lacking[0]}: without --function, a case gives \"messages\", not \"input\"")
    wrapped: Any = None
    if any(mode != LOCAL for mode, _ in runs):
        if client is None:
            raise UsageError("calling a model needs a client (an openai, anthropic or gemini SDK client)")
        wrapped = wrap(client)
        if wrapped._guardrail.asynchronous:
            raise UsageError("guardrail eval runs a synchronous client (openai.OpenAI, anthropic.Anthropic) in "
                             "worker threads; pass the sync one")

    def work(mode: str, model: str, case: Case) -> CaseResult:
        if mode == LOCAL:
            return local_case(local_model, model, case, contract, rules, max_tokens or LOCAL_MAX_NEW_TOKENS)
        return _call(wrapped, api, case, mode, model, contract, rules, prompt_version, max_tokens)

    return work


#: New tokens a local generation may make when no ``max_tokens`` is given (as the decorator's local chain).
LOCAL_MAX_NEW_TOKENS = 512


def _run_all(items: Iterable[Any], workers: int, work: Callable[[Any], CaseResult],
             finished: Callable[[CaseResult], None]) -> None:
    """``work`` over ``items`` in ``workers`` threads, at most ``workers`` submitted at a time (so an interrupted
    run leaves the rest unstarted); ``finished`` with each result."""
    pending = iter(items)
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="guardrail-eval") as pool:
        running: set[Future[CaseResult]] = set()
        try:
            for item in pending:
                running.add(pool.submit(work, item))
                if len(running) >= workers:
                    over, running = _settle(running)
                    for future in over:
                        finished(future.result())
            while running:
                over, running = _settle(running)
                for future in over:
                    finished(future.result())
        except BaseException:  # Ctrl-C or a bug: cancel what has not started, let the calls in flight finish
            for future in running:
                future.cancel()
            over, _ = wait(running)
            for future in over:  # their requests were sent: keep their results, so a resumed run skips them
                if not future.cancelled() and future.exception() is None:
                    finished(future.result())
            raise


def _settle(running: set[Future[CaseResult]]) -> tuple[set[Future[CaseResult]], set[Future[CaseResult]]]:
    done, left = wait(running, return_when=FIRST_COMPLETED)
    return set(done), set(left)


def _end_line(path: str | os.PathLike[str]) -> None:
    """End a state file's last line if a crash left it cut short, so the next result starts a line of its own."""
    location = Path(path)
    if not location.exists() or location.stat().st_size == 0:
        return
    with location.open("rb+") as file:
        file.seek(-1, os.SEEK_END)
        if file.read(1) != b"\n":
            file.write(b"\n")


def _append(path: str | os.PathLike[str], result: CaseResult) -> None:
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(asdict(result), ensure_ascii=False, default=str) + "\n")
