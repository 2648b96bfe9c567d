"""Futures of asynchronous transfers (Namespace.read_async / write_async)."""
import asyncio
import concurrent.futures


class TransferFuture(concurrent.futures.Future):
    """A transfer in flight: a :class:`concurrent.futures.Future` (``result()``,
    ``done()``, ``add_done_callback()``, ``concurrent.futures.wait``) that is also
    awaitable from asyncio. Its result is ``None`` once the data is in place; it
    raises the transfer's error (:class:`nvmeof.NvmeError`,
    :class:`nvmeof.TransportError`) otherwise. A transfer cannot be cancelled
    once submitted: ``cancel()`` returns False."""

    def __await__(self):
        return asyncio.wrap_future(self).__await__()

    def get(self, timeout=None):
        """``result(timeout)``, as KvikIO's futures name it."""
        return self.result(timeout)
