"""The packing rules computed a batch at a time give exactly what the rules give a piece at
a time: Spark's group count (next fit, largest first) and the lightest-group placement
(LPT, the lower group on a tie), checked against plain per-piece versions written here."""

from __future__ import annotations

import heapq

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from listing.packing import _greedy_count, lightest_first


def _placed_one_by_one(charges: list[int], count: int) -> list[int]:
    loads = [(0, g) for g in range(count)]
    out = []
    for charge in charges:
        load, group = heapq.heappop(loads)
        out.append(group)
        heapq.heappush(loads, (load + charge, group))
    return out


def _sparks_rule(lengths: list[int], max_split: int, open_cost: int) -> int:
    groups, size = 0, 0
    for length in lengths:
        if groups == 0 or size + length > max_split:
            groups, size = groups + 1, 0
        size += length + open_cost
    return groups


SIZES = st.one_of(st.integers(0, 12), st.integers(0, 10**9), st.just(7), st.integers(0, 2**50))


@settings(max_examples=150, deadline=None)
@given(charges=st.lists(SIZES, min_size=1, max_size=1500), count=st.integers(1, 300))
@example(charges=[5] * 700, count=64)  # equal charges: whole rounds at once
@example(charges=[10**6] * 3 + [1] * 500, count=100)  # short batches: a stretch by heap
@example(charges=[2**50] * 200, count=2**17)  # loads that, shifted, pass 64 bits
def test_lightest_first_places_each_piece_as_one_at_a_time(charges, count):
    ordered = sorted(charges, reverse=True)
    got = lightest_first(np.array(ordered, np.int64), count)
    assert got.tolist() == _placed_one_by_one(ordered, count)


@settings(max_examples=150, deadline=None)
@given(lengths=st.lists(st.one_of(st.integers(0, 100), st.integers(0, 10**7)), min_size=1,
                        max_size=3000),
       max_split=st.integers(1, 10**7), open_cost=st.integers(0, 10**4))
@example(lengths=[1] * 2000, max_split=128, open_cost=4)  # few big groups: searched
@example(lengths=[100] * 50, max_split=10, open_cost=0)  # pieces over a split: stepped
def test_the_group_count_is_sparks_rule(lengths, max_split, open_cost):
    ordered = sorted(lengths, reverse=True)
    assert (_greedy_count(np.array(ordered, np.int64), max_split, open_cost)
            == _sparks_rule(ordered, max_split, open_cost))
