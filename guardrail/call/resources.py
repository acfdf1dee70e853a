"""A wrapped client's resources: subclasses of the SDK's own resource classes, made once per SDK class.

``guardrail.wrap`` serves ``create(response_model=...)`` on each SDK resource an endpoint lists
(:attr:`~guardrail.vendors.base.Endpoint.paths`: ``chat.completions``, ``beta.chat.completions``, ``responses``,
``messages``, ...). The namespaces on the way there (``chat``, ``beta``) and the SDK's
``with_raw_response``/``with_streaming_response`` twins of each are subclassed too, so that every way the SDK
offers to reach a ``create`` reaches guardrail's. Each class made here:

* subclasses the SDK's class (``isinstance`` holds, every other member is the SDK's own, ``dir()`` lists them);
* at a namespace, overrides only the members on the way to a structured resource, and builds them the way the
  SDK does (a resource from the client, a twin from the resource);
* at a structured resource, puts a mixin of :mod:`guardrail.call.methods` in front, whose ``create`` signature is
  the SDK's own with guardrail's keywords added (``inspect.signature``, ``help()`` and IDEs show both).

Which SDK class sits at a member is learnt from the SDK itself (its cached property is called once on a first
instance, never stored), so nothing here names an SDK class.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import threading
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from guardrail.call.methods import (
    KEYWORDS_DOC,
    AsyncRawStructuredMethod,
    AsyncStructuredMethod,
    RawStructuredMethod,
    StreamingResponseMethod,
    StructuredMethod,
    Twin,
)
from guardrail.call.options import KEYWORDS, CallOptions
from guardrail.vendors.base import Endpoint

__all__ = ["FLAVORS", "Tree", "adopt", "has_member", "made", "resource_class", "same_signature", "sdk_dir",
           "sdk_member", "sdk_member_class", "tree_of", "twin_class"]

#: A namespace's members on the way to structured resources: a member name, then its own tree, or at a structured
#: resource the endpoint class it speaks.
Tree = Mapping[str, "Tree | type[Endpoint]"]

#: The SDK's flavors of a resource, each a twin class built from the resource.
FLAVORS = ("with_raw_response", "with_streaming_response")

_LOCK = threading.Lock()
_CLASSES: dict[tuple[Any, ...], type] = {}
_MEMBER_CLASSES: dict[tuple[type, str], type] = {}


def tree_of(paths: Mapping[str, type[Endpoint]]) -> dict[str, Any]:
    """The nested tree of dotted resource paths (``{"beta.chat.completions": ChatCompletions}`` ->
    ``{"beta": {"chat": {"completions": ChatCompletions}}}``)."""
    tree: dict[str, Any] = {}
    for path, endpoint in paths.items():
        *parents, leaf = path.split(".")
        node = tree
        for name in parents:
            node = node.setdefault(name, {})
        node[leaf] = endpoint
    return tree


def _frozen(node: Tree | type[Endpoint]) -> Any:
    if isinstance(node, Mapping):
        return tuple(sorted((name, _frozen(child)) for name, child in node.items()))
    return node


def _made(key: tuple[Any, ...], make: Callable[[], type]) -> type:
    found = _CLASSES.get(key)
    if found is None:
        made = make()
        with _LOCK:
            found = _CLASSES.setdefault(key, made)
    return found


def sdk_member(sdk_class: type, name: str, instance: Any) -> Any:
    """The SDK's member ``name`` of ``instance`` (an object of ``sdk_class`` or of guardrail's subclass of it),
    made by the SDK's own (cached) property function and stored nowhere: not in the instance's ``__dict__``, which
    for a client is the SDK client's own. A client that sets its resources in ``__init__`` instead (anthropic's
    ``AnthropicBedrock`` and ``AnthropicVertex``) has them in that ``__dict__``: that object is returned."""
    try:
        member = inspect.getattr_static(sdk_class, name)
    except AttributeError:
        member = None
    function = getattr(member, "func", None) or getattr(member, "fget", None)
    if function is None:
        own = getattr(instance, "__dict__", None) or {}
        if name in own:
            return own[name]
        raise TypeError(f"{sdk_class.__qualname__}.{name} is not a property")  # pragma: no cover
    return function(instance)


def sdk_member_class(sdk_class: type, name: str, instance: Any) -> type:
    """The class of the SDK's member ``name`` of ``sdk_class`` (a resource or a twin), learnt once from
    :func:`sdk_member` on ``instance``."""
    key = (sdk_class, name)
    found = _MEMBER_CLASSES.get(key)
    if found is None:
        made = type(sdk_member(sdk_class, name, instance))
        with _LOCK:
            found = _MEMBER_CLASSES.setdefault(key, made)
    return found


def has_member(sdk_class: type, name: str, instance: Any = None) -> bool:
    """Whether the SDK class has a member ``name`` (beta namespaces and twins vary between SDK versions), or
    ``instance`` has it as its own attribute (a client that sets its resources in ``__init__``)."""
    try:
        inspect.getattr_static(sdk_class, name)
    except AttributeError:
        return name in (getattr(instance, "__dict__", None) or {})
    return True


def _named(sdk_class: type, namespace: dict[str, Any]) -> dict[str, Any]:
    """A made class's namespace with the SDK class's names (tracebacks and ``repr`` read as the SDK's), the SDK
    class it stands for (``_guardrail_sdk``), and the SDK's ``dir()``."""
    return {"__module__": __name__, "__qualname__": sdk_class.__qualname__, "_guardrail_sdk": sdk_class,
            "__dir__": sdk_dir, **namespace}


def sdk_dir(self: Any) -> list[str]:
    """``dir()`` of an object of a class made here: the SDK class's names and the instance's attributes, as the
    SDK object's would be. guardrail's additions (``create_with_result``, ``create_partial``, ``endpoint``,
    ``vendor``) work but are left out, so code that compares member lists (the SDKs' own tests check that
    their Bedrock and Vertex clients list the same methods as the first-party one) sees the SDK's."""
    names = set(dir(type(self)._guardrail_sdk))
    own = getattr(self, "__dict__", {})
    names.update(name for name in own if not name.startswith("_guardrail"))
    if "_guardrail_sdk_create" in own:  # a twin's create, set on the instance by the SDK (guardrail's is in front)
        names.add("create")
    return sorted(names)


# -- resources ------------------------------------------------------------------------------------------------
def resource_class(sdk_class: type, node: Tree | type[Endpoint], asynchronous: bool) -> type:
    """guardrail's subclass of an SDK resource class: a namespace on the way (``node`` a tree), or a structured
    resource (``node`` the endpoint class it speaks)."""
    return _made(("resource", sdk_class, _frozen(node), asynchronous),
                 lambda: _make_resource(sdk_class, node, asynchronous))


def _make_resource(sdk_class: type, node: Tree | type[Endpoint], asynchronous: bool) -> type:
    namespace: dict[str, Any] = {name: _flavor(name, node, asynchronous) for name in FLAVORS
                                 if has_member(sdk_class, name)}
    namespace["__slots__"] = ("_guardrail_client",)
    if isinstance(node, Mapping):
        namespace.update({name: _child(name, child, asynchronous) for name, child in node.items()})
        return type(sdk_class.__name__, (sdk_class,), _named(sdk_class, namespace))
    mixin: Any = AsyncStructuredMethod if asynchronous else StructuredMethod
    methods = node.methods
    sdk_value = getattr(sdk_class, methods.value)
    namespace[methods.value] = same_signature(mixin.create, sdk_class, sdk_value, methods.value, KEYWORDS_DOC)
    namespace[methods.result] = adopt(mixin.create_with_result, sdk_class, sdk_value, methods.result)
    if has_member(sdk_class, methods.partial):  # the SDK's own stream method too (Gemini's generate_content_stream)
        namespace[methods.partial] = same_signature(mixin.create_partial, sdk_class,
                                                    getattr(sdk_class, methods.partial), methods.partial,
                                                    KEYWORDS_DOC)
    else:
        namespace[methods.partial] = adopt(mixin.create_partial, sdk_class, sdk_value, methods.partial)
    namespace[methods.iterable] = adopt(mixin.create_iterable, sdk_class, sdk_value, methods.iterable)
    for name in ("create", "create_with_result", "create_partial", "create_iterable"):  # names this SDK lacks
        if name not in namespace and not has_member(sdk_class, name):
            namespace[name] = _ABSENT
    namespace["_guardrail_endpoint"] = node
    return type(sdk_class.__name__, (mixin, sdk_class), _named(sdk_class, namespace))


def _absent(self: Any) -> Any:
    raise AttributeError("not a method of this SDK's resource")


#: A mixin method an SDK's resource does not have under that name (Gemini's are ``generate_content``, ...).
_ABSENT = property(_absent)


def made(cls: type, sdk_object: Any, client: Any) -> Any:
    """An object of ``cls`` (guardrail's subclass of ``sdk_object``'s class) with ``sdk_object``'s state: the
    SDK's member as the SDK made it (a fresh resource on the client, or one the client keeps: google-genai's
    ``client.models``, the resources anthropic's platform clients set in ``__init__``), seen through guardrail's
    class, which knows the wrapped ``client`` its structured calls belong to.

    The state is a shallow copy (the same HTTP client, options and API client objects), so nothing guardrail's
    class caches on its object (its ``with_raw_response`` twins, its namespaces' members) lands on the SDK's own
    object, and a twin the SDK cached there is not taken for guardrail's. A member that points at the client it
    came from (``_client``) points at the wrapped one, the same client."""
    own = {name for name, member in vars(cls).items() if isinstance(member, functools.cached_property)}
    state = {name: value for name, value in vars(sdk_object).items() if name not in own}
    given = state.get("_client")
    if given is not None and given is not client and getattr(given, "__dict__", None) is getattr(client, "__dict__",
                                                                                                   None):
        state["_client"] = client
    found: Any = object.__new__(cls)
    found.__dict__ = state
    found._guardrail_client = client
    return found


def _child(name: str, node: Tree | type[Endpoint], asynchronous: bool) -> functools.cached_property[Any]:
    """A namespace's member on the way: guardrail's class of the SDK's member, made on the same client."""

    def member(self: Any) -> Any:
        own = type(self)._guardrail_sdk
        sdk_object = sdk_member(own, name, self)
        return made(resource_class(type(sdk_object), node, asynchronous), sdk_object, self._guardrail_client)

    member.__name__ = member.__qualname__ = name
    return functools.cached_property(member)


def _flavor(flavor: str, node: Tree | type[Endpoint], asynchronous: bool) -> functools.cached_property[Any]:
    """``with_raw_response``/``with_streaming_response`` of a namespace or resource: guardrail's twin class."""

    def member(self: Any) -> Any:
        own = type(self)._guardrail_sdk
        return twin_class(sdk_member_class(own, flavor, self), node, flavor, asynchronous, own)(self)

    member.__name__ = member.__qualname__ = flavor
    return functools.cached_property(member)


# -- twins ----------------------------------------------------------------------------------------------------
def twin_class(sdk_class: type, node: Tree | type[Endpoint], flavor: str, asynchronous: bool,
               resource_sdk: type) -> type:
    """guardrail's subclass of an SDK twin class (``ChatWithRawResponse``, ``CompletionsWithStreamingResponse``,
    ``OpenAIWithRawResponse``) of a resource (or client) whose SDK class is ``resource_sdk``: its members on the
    way are the same flavor of the resource's guardrail members."""
    return _made(("twin", sdk_class, _frozen(node), flavor, asynchronous),
                 lambda: _make_twin(sdk_class, node, flavor, asynchronous, resource_sdk))


def _make_twin(sdk_class: type, node: Tree | type[Endpoint], flavor: str, asynchronous: bool,
               resource_sdk: type) -> type:
    if isinstance(node, Mapping):
        namespace = {name: _twin_child(name, flavor) for name in node if has_member(sdk_class, name)}
        return type(sdk_class.__name__, (Twin, sdk_class), _named(sdk_class, namespace))
    mixin: type
    resource_create = resource_sdk.create  # type: ignore[attr-defined]
    if flavor == "with_streaming_response":
        mixin = StreamingResponseMethod
        create = same_signature(mixin.create, sdk_class, resource_create, "create")
    else:
        mixin = AsyncRawStructuredMethod if asynchronous else RawStructuredMethod
        create = same_signature(mixin.create, sdk_class, resource_create, "create", KEYWORDS_DOC)
    return type(sdk_class.__name__, (mixin, sdk_class), _named(sdk_class, {"create": create}))


def _twin_child(name: str, flavor: str) -> functools.cached_property[Any]:
    def member(self: Any) -> Any:
        return getattr(getattr(self._guardrail_of, name), flavor)

    member.__name__ = member.__qualname__ = name
    return functools.cached_property(member)


# -- signatures -----------------------------------------------------------------------------------------------
def keyword_parameters() -> list[inspect.Parameter]:
    """guardrail's keywords as keyword-only parameters, as :class:`~guardrail.call.options.CallOptions` declares
    them (``response_model`` required: only the methods that need it show them)."""
    return [inspect.Parameter(field.name, inspect.Parameter.KEYWORD_ONLY,
                              default=inspect.Parameter.empty if field.name == "response_model" else field.default,
                              annotation="type[T] | Any" if field.name == "response_model" else field.type)
            for field in dataclasses.fields(CallOptions) if field.name in KEYWORDS]


def merged_signature(sdk_function: Callable[..., Any], returns: Any) -> inspect.Signature:
    """The SDK function's signature with guardrail's keywords added before any ``**kwargs``, returning ``returns``."""
    signature = inspect.signature(sdk_function)
    parameters = list(signature.parameters.values())
    at = next((i for i, p in enumerate(parameters) if p.kind is inspect.Parameter.VAR_KEYWORD), len(parameters))
    ours = [p for p in keyword_parameters() if p.name not in signature.parameters]
    return signature.replace(parameters=[*parameters[:at], *ours, *parameters[at:]], return_annotation=returns)


def sdk_doc(function: Callable[..., Any]) -> str:
    """The SDK function's docstring; when the implementation has none, its first overload's (the SDK documents
    ``create`` on its overloads)."""
    doc = inspect.getdoc(function)
    if doc:
        return doc
    target = inspect.unwrap(function)
    for overloaded in typing.get_overloads(target):
        doc = inspect.getdoc(overloaded)
        if doc:
            return doc
    return ""


def adopt(function: Callable[..., Any], sdk_class: type, sdk_function: Callable[..., Any], name: str
          ) -> Callable[..., Any]:
    """A copy of guardrail's own method ``function`` (the same code) for ``sdk_class``, whose signature is the SDK
    function's with guardrail's keywords added (``response_model`` required) and whose docstring is guardrail's."""
    made = _copy(function, name, sdk_class)
    made.__signature__ = merged_signature(sdk_function, inspect.signature(function).return_annotation)
    made.__doc__ = "\n\n".join(part for part in (inspect.getdoc(function), KEYWORDS_DOC) if part)
    copied: Callable[..., Any] = made
    return copied


def same_signature(function: Callable[..., Any], sdk_class: type, sdk_function: Callable[..., Any], name: str,
                   extra_doc: str = "") -> Callable[..., Any]:
    """A copy of ``function`` for ``sdk_class`` that shows the SDK function's signature and docstring (followed by
    ``extra_doc``).

    ``create`` keeps the SDK's signature exactly, guardrail's keywords documented in its docstring only: the SDKs
    check that their other methods (``parse``, ``stream``) take every parameter of ``create``
    (``openai._utils.assert_signatures_in_sync``), so a parameter added there would break the SDK's own
    invariant. Type checkers see guardrail's keywords through :mod:`guardrail.call.client_types`.
    """
    made = _copy(function, name, sdk_class)
    made.__signature__ = inspect.signature(sdk_function)
    made.__doc__ = "\n\n".join(part for part in (sdk_doc(sdk_function), extra_doc) if part) or None
    copied: Callable[..., Any] = made
    return copied


def _copy(function: Callable[..., Any], name: str, sdk_class: type) -> Any:
    source: Any = function
    made = types.FunctionType(source.__code__, source.__globals__, name, source.__defaults__, source.__closure__)
    made.__kwdefaults__ = source.__kwdefaults__
    made.__module__ = source.__module__
    made.__qualname__ = f"{sdk_class.__qualname__}.{name}"
    made.__annotations__ = dict(source.__annotations__)
    return made
