"""Cases for a decorated function (``guardrail eval --function MODULE:fn``): each case's ``input`` is the
function's arguments, and the case runs the function the way the application calls it.

The function's contract, prompt, rules and prompt version are its own (``@guardrail.structured(...)``); a run
replaces only the model, the mode and the output-token limit (:meth:`StructuredFunction.using`), or, in the
``local`` mode, its client with the local model (the decorator's own one-tier local chain). The figures come
from the :class:`~guardrail.Result` ``with_result`` returns, judged exactly like a messages case's.
"""

from __future__ import annotations

import inspect
import time
import typing
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import TypeAdapter, ValidationError

from guardrail.call.decorator import StructuredFunction
from guardrail.errors import CallError, ChainExhausted, CommandError, GuardrailError, UsageError
from guardrail.evals.cases import Case
from guardrail.evals.local import local_outcome
from guardrail.evals.run import judge_case
from guardrail.outcome import Result

__all__ = ["Arguments", "bind_inputs", "function_case", "structured_function"]

#: A case's arguments for the function: positional and keyword.
Arguments = tuple[tuple[Any, ...], dict[str, Any]]


def structured_function(candidate: Any, name: str) -> StructuredFunction[Any, Any]:
    """``candidate`` as a synchronous ``@guardrail.structured`` function, else :class:`CommandError`."""
    if not isinstance(candidate, StructuredFunction):
        raise CommandError(f"--function {name}: {type(candidate).__name__} is not a @guardrail.structured function")
    if inspect.iscoroutinefunction(inspect.unwrap(candidate)):
        raise CommandError(f"--function {name}: an async function; guardrail eval runs cases in worker threads, "
                           "so decorate a def (the same docstring and return annotation) for the experiment")
    return candidate


def bind_inputs(function: StructuredFunction[Any, Any], cases: Sequence[Case]) -> dict[str, Arguments]:
    """Each case's arguments, by case id: ``input`` a JSON object gives keyword arguments, any other value the
    one positional argument; each converted to its parameter's annotated type (a JSON object to a pydantic
    model...). A case that does not fit the signature is a :class:`CommandError` naming it, before any call
    (a case skipped halfway would skew the counts)."""
    unwrapped = inspect.unwrap(function)
    signature = inspect.signature(unwrapped)
    try:
        hints = typing.get_type_hints(unwrapped, include_extras=True)
    except Exception as error:  # an annotation that names what the module does not define
        raise CommandError(f"the annotations of {unwrapped.__qualname__} cannot be read: {error}") from None
    bound: dict[str, Arguments] = {}
    for case in cases:
        if not case.has_input:
            raise CommandError(f"case {case.id}: --function cases give the function's arguments as \"input\", "
                               "not \"messages\"")
        args: tuple[Any, ...] = ()
        kwargs: dict[str, Any] = {}
        if isinstance(case.input, Mapping):
            kwargs = {str(key): value for key, value in case.input.items()}
        else:
            args = (case.input,)
        try:
            arguments = signature.bind(*args, **kwargs).arguments
        except TypeError as error:
            raise CommandError(f"case {case.id}: \"input\" does not fit {unwrapped.__qualname__}{signature}: "
                               f"{error}") from None
        converted: dict[str, Any] = {}
        for name, value in arguments.items():
            hint = hints.get(name)
            if hint is None:
                converted[name] = value
                continue
            try:
                converted[name] = TypeAdapter(hint).validate_python(value)
            except ValidationError as error:
                raise CommandError(f"case {case.id}: input {name!r} is not a {_name(hint)}: "
                                   f"{error.errors()[0]['msg']}") from None
        bound[case.id] = ((), converted)
    return bound


def _name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint)


def function_case(function: StructuredFunction[Any, Any], arguments: Arguments, case: Case, mode: str, model: str,
                  *, local: bool = False) -> Any:
    """Run one case through ``function`` (already set up for the run with :meth:`~StructuredFunction.using`)
    and judge it; an error that is not guardrail's (a bug) propagates."""
    args, kwargs = arguments
    contract = function.output_type
    started = time.perf_counter()
    try:
        result = function.with_result(*args, **kwargs)
    except CallError as error:
        return judge_case(case, mode, model, contract, error.outcome, None, error)
    except ChainExhausted as error:  # the local tier failed: its error is the case's
        reason: GuardrailError = error
        if error.departures and isinstance(error.departures[-1].error, GuardrailError):
            reason = error.departures[-1].error
        spent = local_outcome(model, time.perf_counter() - started, error=reason)
        return judge_case(case, mode, model, contract, spent, None, reason)
    except GuardrailError as error:
        return judge_case(case, mode, model, contract, None, None, error)
    if isinstance(result, Result):
        return judge_case(case, mode, model, contract, result, result.value, None)
    if not local:
        name = inspect.unwrap(function).__qualname__
        raise UsageError(f"{name} runs through a chain (chain=), which picks its own tiers: give guardrail eval a "
                         "function without one to compare modes and models")
    seconds = float(getattr(result, "seconds", time.perf_counter() - started))
    return judge_case(case, mode, model, contract, local_outcome(model, seconds), result.value, None)
