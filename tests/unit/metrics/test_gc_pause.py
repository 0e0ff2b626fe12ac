"""The collector is paused while a plan lists, and resumed as it was found."""

from __future__ import annotations

import gc
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from listing import ListingTable
from listing.gc_pause import gc_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_paused_inside_and_resumed_after_even_on_error(collector_on):
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():  # re-entrant
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_switched_off_by_the_user_stays_off(collector_on):
    gc.disable()
    with gc_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_resumed_only_when_the_last_of_concurrent_plans_ends(collector_on):
    inside, release = threading.Event(), threading.Event()

    def other_plan():
        with gc_paused():
            inside.set()
            release.wait(10)

    thread = threading.Thread(target=other_plan)
    thread.start()
    assert inside.wait(10)
    with gc_paused():
        pass
    assert not gc.isenabled()  # the other plan still lists
    release.set()
    thread.join()
    assert gc.isenabled()


def test_a_scan_lists_with_the_collector_paused_and_resumes_it(collector_on, tmp_path,
                                                              monkeypatch):
    for day in ("2026-03-01", "2026-03-02"):
        (tmp_path / f"date={day}").mkdir()
        pq.write_table(pa.table({"x": [1]}), tmp_path / f"date={day}" / "part-0.parquet")
    seen = []
    import listing.table as table_module

    real = table_module.ListingTable._kept

    def spy(self, batches):
        def watched():
            for batch in batches:
                seen.append(gc.isenabled())
                yield batch
        return real(self, watched())

    monkeypatch.setattr(table_module.ListingTable, "_kept", spy)
    plan = ListingTable.open(str(tmp_path)).scan()
    assert len(plan.files) == 2 and seen and not any(seen)  # a look per listed batch
    assert gc.isenabled()
