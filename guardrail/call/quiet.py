"""The client view structured calls send through: the same client, with the SDK's own retries off.

guardrail retries transport failures itself (:class:`~guardrail.call.retry.RetryPolicy`), so its requests must
not be retried by the SDK too. The view is an instance of a subclass of the wrapped client's class that *shares*
the client's state (its ``__dict__``): ``base_url``, ``timeout``, headers, the HTTP client, a monkeypatched
method, all are the live client's, read when the request is built. Only ``max_retries`` differs: a property of
the view's class that reads 0. Nothing is copied and the SDK's constructor is not run again, so a client the SDK
accepted is always one guardrail can send through.

The view never makes the SDK's cached resources (``client.models``, ...): those would be stored in the shared
``__dict__`` and seen by the client itself. Only the resources structured calls send through are made on it, by
:func:`quiet_resource`, and kept on the view.
"""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["quiet_resource"]


class _NoRetries:
    """The view's part: ``max_retries`` reads 0 (a data descriptor, so it wins over the shared ``__dict__``)."""

    __slots__ = ()

    @property
    def max_retries(self) -> int:
        return 0


_CLASSES: dict[type, type] = {}
_LOCK = threading.Lock()


def _view_class(client_class: type) -> type:
    found = _CLASSES.get(client_class)
    if found is None:
        made = type(client_class.__name__, (_NoRetries, client_class), {
            "__module__": __name__, "__qualname__": client_class.__qualname__, "__slots__": ("_guardrail_resources",)})
        with _LOCK:
            found = _CLASSES.setdefault(client_class, made)
    return found


def _view(client: Any) -> Any:
    view: Any = object.__new__(_view_class(type(client)))
    view.__dict__ = client.__dict__  # the same state, not a copy: every option is read live
    view._guardrail_resources = {}
    return view


def quiet_resource(resource: Any, views: dict[str, Any]) -> Any:
    """The SDK's resource of ``resource``'s class (a guardrail resource of a wrapped client) on the client's view
    without SDK retries: its ``create`` and its ``with_raw_response``/``with_streaming_response`` twins are the
    SDK's own, sending the same requests to the same server, never retried by the SDK. ``views`` is the wrapped
    client's own store (its :class:`~guardrail.call.options.ClientOptions` ``resources``), so a view lives as long
    as the wrapper.
    """
    view = views.get("_quiet")
    if view is None:
        view = views.setdefault("_quiet", _view(resource._client))
    made: dict[type, Any] = view._guardrail_resources
    found = made.get(type(resource))
    if found is None:  # the SDK's own resource class: what is sent through it is the SDK's call, nothing more
        found = made.setdefault(type(resource), type(resource)._guardrail_sdk(view))
    return found
