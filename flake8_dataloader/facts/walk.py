"""One discipline for every transitive walk: a typed visited set, a component-wise memo, a work budget."""

from __future__ import annotations

from typing import Any, Callable, Dict, FrozenSet, Generic, Hashable, List, Optional, Set, TypeVar

from ..errors import BudgetExceeded

K = TypeVar("K", bound=Hashable)
# Nested walk frames at most (each costs a few Python frames; Python allows 1,000 by default).
MAX_DEPTH = 100
# Flow steps one file's facts may take (a key computed, a value carried into a union, a fixpoint
# edge, a call scanned). The most any file of 53 real trees took was 20,180 (docs/speed.md, "No input can
# hang it"): a fiftieth of it.
DEFAULT_BUDGET = 1_000_000
V = TypeVar("V")


class WorkBudget:
    """Flow steps counted for one file; past ``limit`` the walk stops with BudgetExceeded.

    Steps, not seconds: the same input gives up at the same place on every machine.
    """

    def __init__(self, limit: int = DEFAULT_BUDGET) -> None:
        self.limit = limit
        self.spent = 0

    def spend(self, steps: int) -> None:
        self.spent += steps
        if self.spent > self.limit:
            raise BudgetExceeded(f"more than {self.limit:,} flow steps")


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
    """Memoised union walks over a graph that may have cycles, linear in the graph.

    Each key's value is its own terminals united with its successors' values, so every key
    of a strongly connected component has the same value. Tarjan's algorithm, run while the
    walk recurses: a key met again while its component is still open contributes nothing
    there (its terminals reach the component's root through the frames that entered it),
    and when the root of a component returns, its value is stored for every key of the
    component at once. So each key is computed once, whatever the shape of the cycles:
    the work is the keys plus the edges, times the size of the values carried.
    """

    def __init__(self, budget: Optional[WorkBudget] = None) -> None:
        self._done: Dict[K, FrozenSet[V]] = {}
        self._index: Dict[K, int] = {}  # open keys (entered, component not yet closed): stack position
        self._stack: List[K] = []  # Tarjan's stack of open keys
        self._low: List[int] = []  # per computing frame: the lowest stack position it reached
        self._budget = budget

    def get(self, key: K, compute: Callable[..., FrozenSet[V]], *args: Any) -> FrozenSet[V]:
        done = self._done.get(key)
        if done is not None:
            self._charge(len(done))
            return done
        index = self._index.get(key)
        if index is not None:  # in an open component: its root will hold the full value
            self._low[-1] = min(self._low[-1], index)
            return frozenset()
        if len(self._low) >= MAX_DEPTH:
            # Too deep to follow on Python's stack (a chain of hundreds of aliases): this key is
            # given up here and the frames above store what they have, so the walk stays linear.
            return frozenset()
        self._charge(1)
        index = len(self._stack)
        self._index[key] = index
        self._stack.append(key)
        self._low.append(index)
        try:
            value = compute(*args)
        except BaseException:
            self._unwind(index)
            raise
        low = self._low.pop()
        if self._low:
            self._low[-1] = min(self._low[-1], low)
        if low >= index:  # the root of its component: the component is closed
            for member in self._stack[index:]:
                self._done[member] = value
                del self._index[member]
            del self._stack[index:]
        self._charge(len(value))
        return value

    def _charge(self, steps: int) -> None:
        if self._budget is not None:
            self._budget.spend(steps)

    def _unwind(self, index: int) -> None:
        """An exception left the walk: forget the open keys, whose values are incomplete."""
        self._low.pop()
        for member in self._stack[index:]:
            del self._index[member]
        del self._stack[index:]
