"""An HTTP transport that applies a URL policy to every request a tool makes: each redirect hop, and the IP
address it really connects to.

Checking the URL the model proposed is not enough for a tool that fetches it: the server can redirect
(``302 Location: http://169.254.169.254/``) and a permitted name can resolve, or be rebound after the check,
to a private address (DNS rebinding). :class:`GuardedTransport` is an httpx transport (``httpx2``, which
the vendor SDKs bring; imported on first use) that

1. checks the URL of every request it sends (:meth:`UrlRule.canonical
   <guardrail.tools.policy.model.UrlRule.canonical>`: hosts, schemes, ports, nested URLs), so each hop of
   ``follow_redirects=True`` is judged like the first;
2. resolves the host itself when it connects, refuses the connection when *any* address the name resolves to
   is not public (loopback, private, link-local, metadata, multicast, reserved, unspecified) unless the rule's
   ``connect_to`` lists its network, and connects to the address it checked, so a second DNS answer cannot
   swap it. TLS still verifies the certificate against the host name.

A refusal raises :class:`~guardrail.errors.ConnectionDenied` (``.url``, ``.reason``) before any byte is sent
to the refused address. :func:`guarded_client` builds an ``httpx.Client`` around the transport (environment
proxies off: a proxy would make the connect-time check judge the proxy's address). Unix sockets are refused.
:class:`AsyncGuardedTransport` and :func:`guarded_async_client` do the same for ``httpx.AsyncClient`` under
asyncio (names are resolved in the loop's default executor).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from guardrail.errors import ConnectionDenied, GuardrailError, Rejected

if TYPE_CHECKING:
    from guardrail.tools.policy.model import UrlRule

__all__ = ["AsyncGuardedTransport", "GuardedTransport", "guarded_async_client", "guarded_client"]


def _httpx() -> Any:
    """The httpx module the vendor SDKs use (``httpx2``), imported on first use."""
    from guardrail._optional import require

    return require("httpx2", "http", "the guarded HTTP transport (guardrail.tools.policy.http)")


class _CheckedBackend:
    """An httpcore network backend that resolves, checks and pins the address of every TCP connection."""

    def __init__(self, inner: Any, rule: UrlRule) -> None:
        self._inner = inner
        self._rule = rule

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> Any:
        addresses = _resolve(host, port)
        _check_addresses(self._rule, host, port, addresses)
        return self._inner.connect_tcp(addresses[0], port, timeout=timeout, local_address=local_address,
                                       socket_options=socket_options)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> Any:
        raise ConnectionDenied(path, "Unix sockets are not reachable through a guarded transport")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncCheckedBackend:
    """The asyncio twin of :class:`_CheckedBackend`."""

    def __init__(self, inner: Any, rule: UrlRule) -> None:
        self._inner = inner
        self._rule = rule

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options: Iterable[Any] | None = None) -> Any:
        addresses = await asyncio.get_running_loop().run_in_executor(None, _resolve, host, port)
        _check_addresses(self._rule, host, port, addresses)
        return await self._inner.connect_tcp(addresses[0], port, timeout=timeout, local_address=local_address,
                                             socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> Any:
        raise ConnectionDenied(path, "Unix sockets are not reachable through a guarded transport")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def _check_addresses(rule: UrlRule, host: str, port: int, addresses: list[str]) -> None:
    """:class:`ConnectionDenied` unless every address ``host`` resolved to may be connected to."""
    if not addresses:
        raise ConnectionDenied(f"{host}:{port}", "the host name does not resolve")
    for address in addresses:
        reason = rule.address_reason(address)
        if reason is not None:
            raise ConnectionDenied(f"{host}:{port}", f"{host} resolves to a refused address: {reason}")


def _resolve(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (an IP literal is its own address)."""
    try:
        return [str(ipaddress.ip_address(host.strip("[]")))]
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    addresses: list[str] = []
    for _family, _type, _proto, _name, sockaddr in found:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def _check_request(rule: UrlRule, request: Any) -> None:
    url = str(request.url)
    try:
        rule.canonical(url)
    except Rejected as rejected:
        raise ConnectionDenied(url, rejected.reason) from None


def _inner_transport(kind: str, rule: UrlRule, backend: type[Any], options: dict[str, Any]) -> Any:
    """An httpx transport of ``kind`` whose connection pool connects through ``backend``."""
    for refused in ("proxy", "uds"):
        if options.get(refused) is not None:
            raise GuardrailError(f"a guarded transport does not support {refused}=: it would bypass the address check")
    inner = getattr(_httpx(), kind)(**options)
    pool = getattr(inner, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        raise GuardrailError("this httpx version does not expose its connection pool; the transport hook "
                             "cannot check addresses")
    pool._network_backend = backend(pool._network_backend, rule)
    return inner


class GuardedTransport:
    """An httpx transport applying ``rule`` to every request and every connection (module docstring).

    ``transport_options`` go to ``httpx.HTTPTransport`` (``verify``, ``retries``, ``limits``...; not
    ``proxy``, not ``uds``).
    """

    def __init__(self, rule: UrlRule, **transport_options: Any) -> None:
        self.rule = rule
        self._inner = _inner_transport("HTTPTransport", rule, _CheckedBackend, transport_options)

    def handle_request(self, request: Any) -> Any:
        """Check the request's URL, then send it through the address-checking connection pool."""
        _check_request(self.rule, request)
        return self._inner.handle_request(request)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> GuardedTransport:
        self._inner.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._inner.__exit__(*exc_info)


class AsyncGuardedTransport:
    """The ``httpx.AsyncClient`` twin of :class:`GuardedTransport` (asyncio)."""

    def __init__(self, rule: UrlRule, **transport_options: Any) -> None:
        self.rule = rule
        self._inner = _inner_transport("AsyncHTTPTransport", rule, _AsyncCheckedBackend, transport_options)

    async def handle_async_request(self, request: Any) -> Any:
        """Check the request's URL, then send it through the address-checking connection pool."""
        _check_request(self.rule, request)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> AsyncGuardedTransport:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self._inner.__aexit__(*exc_info)


def guarded_client(rule: UrlRule, *, follow_redirects: bool = True, max_redirects: int = 5,
                   transport_options: dict[str, Any] | None = None, **client_options: Any) -> Any:
    """An ``httpx.Client`` whose every request and connection goes through a :class:`GuardedTransport`
    for ``rule`` (environment proxies off)."""
    transport = GuardedTransport(rule, **(transport_options or {}))
    return _httpx().Client(transport=transport, follow_redirects=follow_redirects, max_redirects=max_redirects,
                           trust_env=False, **client_options)


def guarded_async_client(rule: UrlRule, *, follow_redirects: bool = True, max_redirects: int = 5,
                         transport_options: dict[str, Any] | None = None, **client_options: Any) -> Any:
    """An ``httpx.AsyncClient`` whose every request and connection goes through an
    :class:`AsyncGuardedTransport` for ``rule`` (environment proxies off)."""
    transport = AsyncGuardedTransport(rule, **(transport_options or {}))
    return _httpx().AsyncClient(transport=transport, follow_redirects=follow_redirects,
                                max_redirects=max_redirects, trust_env=False, **client_options)
