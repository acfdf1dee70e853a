"""A wrapped client lives as long as the caller keeps it: once the last reference goes, it (with its SDK client, its
connection pool and its sockets) is collected, whatever guardrail remembered about it while it was used (the
telemetry's per-resource targets, the views without SDK retries, the prepared plans).

A per-resource cache that holds its resource alive leaks a connection pool per client: a service that makes a
client per request runs out of file descriptors. These tests make the calls that fill every such cache, drop the
client and check it is gone.
"""

from __future__ import annotations

import asyncio
import gc
import weakref
from typing import Any

import pytest
from support.calls import APIS, PRINTER_GOOD, Ticket, api_method, printer_args, wrapped_client

from guardrail.testing import Emulator, reply


def gone(ref: weakref.ref[Any]) -> bool:
    gc.collect()
    return ref() is None


@pytest.mark.parametrize("api", APIS)
def test_a_used_client_is_collected_once_dropped(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD), reply.answer(PRINTER_GOOD))
    client = wrapped_client(emu, api)
    method = api_method(client, api)
    assert method.create(response_model=Ticket, **printer_args(api)).priority == 5
    assert list(method.create_partial(response_model=Ticket, **printer_args(api)))
    ref, pool = weakref.ref(client), weakref.ref(client._client)  # the SDK's HTTP client, holding the sockets
    del client, method
    assert gone(ref) and gone(pool)


@pytest.mark.parametrize("api", APIS)
def test_a_used_async_client_is_collected_once_dropped(emu: Emulator, api: str) -> None:
    emu.script(reply.answer(PRINTER_GOOD))
    client = wrapped_client(emu, api, is_async=True)

    async def call(wrapped: Any) -> Ticket:
        value: Ticket = await api_method(wrapped, api).create(response_model=Ticket, **printer_args(api))
        await wrapped.close()
        return value

    assert asyncio.run(call(client)).priority == 5
    ref, pool = weakref.ref(client), weakref.ref(client._client)
    del client
    assert gone(ref) and gone(pool)
