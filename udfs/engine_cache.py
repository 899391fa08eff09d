"""Per-Python-worker cache of loaded engines, keyed by content, not by call.

The cache lives for the worker process: with `spark.python.worker.reuse=true` (Spark's
default) that spans tasks, so an executor loads each (artifact, backend, device) once. Spark
kills Python workers idle for about a minute, which empties it; large models may need more
`spark.executor.memoryOverhead`, since each worker holds its own copy.
"""
from __future__ import annotations

import collections
import os
import threading
from typing import Callable, Hashable, TypeVar

T = TypeVar("T")


class EngineCache:
    """A small LRU behind a lock; evicted entries are closed."""

    def __init__(self, capacity: int = 2):
        self.capacity = capacity
        self._items: "collections.OrderedDict[Hashable, T]" = collections.OrderedDict()
        self._lock = threading.Lock()

    def get_or_load(self, key: Hashable, load: Callable[[], T]) -> tuple[T, bool]:
        """Return (value, loaded_now)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key], False
            value = load()
            self._items[key] = value
            while len(self._items) > self.capacity:
                _, evicted = self._items.popitem(last=False)
                close = getattr(evicted, "close", None)
                if close:
                    close()
            return value, True


WORKER_CACHE = EngineCache(int(os.environ.get("ACCEL_SCORING_ENGINE_CACHE", "2")))
