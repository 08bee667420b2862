"""uvicorn's HTTP protocol with a deadline for request headers (slowloris).

uvicorn closes a keep-alive connection that stays idle after a response, but a connection that
sends nothing, or sends its headers a byte at a time, is kept for ever: a few thousand of them
exhaust the server's file descriptors. :class:`HeaderTimeoutProtocol` gives every request
:data:`TIMEOUT` seconds from the connection (or the end of the previous response) to the end of
its headers, then closes the connection. The body has its own deadline
(grantlog/service/http.py ``BODY_TIMEOUT``).
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

#: the environment variable that carries ``--header-timeout`` to the workers
ENV = "GRANTLOG_HEADER_TIMEOUT"
#: where uvicorn finds the class (``uvicorn.run(..., http=PATH)``)
PATH = "grantlog.service.protocol:HeaderTimeoutProtocol"


def timeout() -> float:
    try:
        return max(0.1, float(os.environ.get(ENV, "10")))
    except ValueError:
        return 10.0


class HeaderTimeoutProtocol(HttpToolsProtocol):
    """httptools' protocol, closing connections whose headers do not arrive in time."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._headers_timer: asyncio.TimerHandle | None = None
        self._header_timeout = timeout()

    def _arm(self) -> None:
        self._disarm()
        self._headers_timer = self.loop.call_later(self._header_timeout, self._expired)

    def _disarm(self) -> None:
        if self._headers_timer is not None:
            self._headers_timer.cancel()
            self._headers_timer = None

    def _expired(self) -> None:
        self._headers_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        if self._headers_timer is None:
            self._arm()

    def on_headers_complete(self) -> None:
        self._disarm()
        super().on_headers_complete()
