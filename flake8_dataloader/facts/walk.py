"""One discipline for every transitive walk: a typed visited set, and a cycle-safe memo."""

from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, Generic, Hashable, List, Set, TypeVar

K = TypeVar("K", bound=Hashable)
# Nested walk frames at most (each costs a few Python frames; Python allows 1,000 by default).
MAX_DEPTH = 100
V = TypeVar("V")


class Visited(Generic[K]):
    """Keys already entered by one walk; `first` says whether this is the first visit."""

    def __init__(self) -> None:
        self._seen: Set[K] = set()

    def first(self, key: K) -> bool:
        if key in self._seen:
            return False
        self._seen.add(key)
        return True


class UnionMemo(Generic[K, V]):
    """Memoised union walks over a graph that may have cycles.

    A key met again while it is still being computed contributes nothing
    there; the frame that first entered it collects the whole cycle. A
    result is stored only when no cycle it took part in is still open above
    it (Tarjan's low-link test), so every stored result is complete and each
    key is computed a bounded number of times: walks stay linear.
    """

    def __init__(self) -> None:
        self._done: Dict[K, FrozenSet[V]] = {}
        self._depth: Dict[K, int] = {}
        self._low: List[int] = []

    def get(self, key: K, compute: Callable[..., FrozenSet[V]], *args: Any) -> FrozenSet[V]:
        done = self._done.get(key)
        if done is not None:
            return done
        depth = self._depth.get(key)
        if depth is not None:  # a cycle: the frame at `depth` will hold the full result
            if self._low:
                self._low[-1] = min(self._low[-1], depth)
            return frozenset()
        depth = len(self._low)
        if depth >= MAX_DEPTH:
            # Too deep to follow on Python's stack (a chain of hundreds of aliases): give up
            # here, and keep every frame above from storing what is now incomplete.
            self._low[-1] = -1
            return frozenset()
        self._depth[key] = depth
        self._low.append(depth)
        try:
            value = compute(*args)
        finally:
            low = self._low.pop()
            del self._depth[key]
        if self._low:
            self._low[-1] = min(self._low[-1], low)
        if low >= depth:
            self._done[key] = value
        return value
