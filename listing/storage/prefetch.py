"""Listings sent ahead of need: the :class:`Fetcher` and its :class:`Request`.

A planner that knows which listings it reads next announces them (``hint``); a few threads
send them while it decides, and it takes each one's pages (``take``) in the order it reads
them, exactly as if it had listed it itself: same pages, same error, same place. s3fs runs
every request on its own event-loop thread (these threads only wait), and the
:class:`~listing.storage.lister.Lister` counts under a lock, so counts stay exact.
"""

from __future__ import annotations

import itertools
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from typing import NamedTuple

from listing.storage.lister import Lister, Page


class Request(NamedTuple):
    """One listing: every page of ``prefix`` within the key bounds (``first_page``: its
    first page only)."""

    prefix: str
    delimiter: bool
    start_after: str | None = None
    stop_after: str | None = None
    first_page: bool = False


class _Job:
    def __init__(self, request: Request, wanted: bool) -> None:
        self.request = request
        self.wanted = wanted  # the run waits for it: it goes first, whatever the window
        self.started = False
        self.done = threading.Event()
        self.pages: list[Page] = []
        self.error: Exception | None = None


class Fetcher:
    """Sends listings from ``workers`` threads ahead of need, and hands their pages back
    in the order the run asks for them.

    ``hint`` announces the listings the run will read next, in order; ``take`` waits for
    one (sending it first when it was not hinted). At most ``workers`` requests are in
    flight and at most ``window`` hinted listings are listed before the run asks for them.
    A listing that fails raises its error when the run takes it, so errors come in the
    order a sequential run meets them. ``close`` drops what was not started and waits for
    the requests in flight. (A listing is handed over whole: handing its pages over as
    they come made the run slower, its decisions then competing for the interpreter
    with the threads that send and parse requests.)
    """

    def __init__(self, lister: Lister, workers: int, window: int | None = None) -> None:
        self.lister = lister
        self.workers = workers
        self.window = window or 2 * workers
        self._cv = threading.Condition()
        self._todo: deque[_Job] = deque()  # not started, in the order they are needed
        self._hinted: dict[Request, deque[_Job]] = {}
        self._ahead = 0  # started, not yet asked for
        self._threads: list[threading.Thread] = []
        self._closed = False

    def hint(self, requests: Sequence[Request]) -> None:
        """Listings the run reads next, in this order: before anything hinted earlier
        (which belongs to later parts of the plan)."""
        if not requests:
            return
        jobs = [_Job(r, False) for r in requests]
        with self._cv:
            for job in jobs:
                self._hinted.setdefault(job.request, deque()).append(job)
            self._todo.extendleft(reversed(jobs))
            self._start()
            self._cv.notify_all()

    def take(self, request: Request) -> list[Page]:
        """Every page of ``request``, once listed; its error if it failed."""
        with self._cv:
            queue = self._hinted.get(request)
            job = queue.popleft() if queue else None
            if queue is not None and not queue:
                del self._hinted[request]
            if job is None:
                job = _Job(request, True)
                self._todo.appendleft(job)
            elif job.started:
                self._ahead -= 1
            else:
                self._todo.remove(job)
                self._todo.appendleft(job)
            job.wanted = True
            self._start()
            self._cv.notify_all()
        job.done.wait()
        if job.error is not None:
            raise job.error
        return job.pages

    def forget(self, requests: Sequence[Request]) -> int:
        """Hinted listings the run will not read after all: those not started are
        dropped (those started still count their requests); returns how many were."""
        started = 0
        with self._cv:
            for request in requests:
                for job in self._hinted.pop(request, ()):
                    if job.started:
                        self._ahead -= 1
                        started += 1
                    else:
                        self._todo.remove(job)
            self._cv.notify_all()
        return started

    def close(self) -> None:
        with self._cv:
            self._closed = True
            self._todo.clear()
            self._hinted.clear()
            self._cv.notify_all()
        for thread in self._threads:
            thread.join()

    def _start(self) -> None:
        while len(self._threads) < self.workers:
            thread = threading.Thread(target=self._work, name="listing-fetch", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _ready(self) -> bool:
        return bool(self._todo) and (self._todo[0].wanted or self._ahead < self.window)

    def _work(self) -> None:
        while True:
            with self._cv:
                while not self._closed and not self._ready():
                    self._cv.wait()
                if self._closed:
                    return
                job = self._todo.popleft()
                job.started = True
                if not job.wanted:
                    self._ahead += 1
            r = job.request
            try:
                pages = self.lister.pages(r.prefix, delimiter=r.delimiter,
                                          start_after=r.start_after, stop_after=r.stop_after)
                try:
                    job.pages = list(itertools.islice(pages, 1) if r.first_page else pages)
                finally:
                    close_pages(pages)
            except Exception as err:  # noqa: BLE001 - raised where the run takes it
                job.error = err
            finally:
                job.done.set()


def close_pages(pages: Iterator[Page]) -> None:
    """Stop a listing generator: it sends no further request."""
    close = getattr(pages, "close", None)
    if close is not None:
        close()
