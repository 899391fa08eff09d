"""Entry point for the processes of the concurrent-download test (imports only engines.store)."""

from __future__ import annotations


def localize_after_barrier(uri: str, cache_dir: str, barrier, results) -> None:  # type: ignore[no-untyped-def]
    from engines.store import localize

    barrier.wait(timeout=30)
    try:
        results.put(("ok", str(localize(uri, cache_dir))))
    except Exception as exc:  # reported to the parent, which fails the test
        results.put(("error", f"{type(exc).__name__}: {exc}"))
