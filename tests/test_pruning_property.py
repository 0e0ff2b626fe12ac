"""Property: a scan lists exactly the files whose partition values satisfy the filter.

Random Hive trees on the S3 server (escaped strings, zero-padded ints, dates, nulls,
sometimes over 1000 keys so the cost model has real choices) and random partition
predicates; the planned file set must equal brute-force evaluation over every file.
"""

from __future__ import annotations

import datetime as dt
import itertools
import uuid

import pyarrow as pa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from listing import ListingTable, col
from listing.expressions import Expr, is_true
from listing.hive import DEFAULT_PARTITION_NAME, escape_path_name

STRINGS = ["a", "b", "ab", "abc", "a/b", "x:y", "100%", "New York", "us", "u", None]
START = dt.date(2025, 1, 1)
COLUMNS = {"d": pa.date32(), "s": pa.string(), "n": pa.int32()}
_counter = itertools.count()


def values_for(name: str, nullable: bool = True) -> st.SearchStrategy:
    if name == "s":
        return st.sampled_from(STRINGS if nullable else [v for v in STRINGS if v is not None])
    values = (st.integers(0, 30) if name == "n"
              else st.integers(0, 800).map(lambda d: START + dt.timedelta(days=d)))
    return st.one_of(st.none(), values) if nullable else values


def spell(value, pad: int) -> str:
    if value is None:
        return DEFAULT_PARTITION_NAME
    if isinstance(value, int):
        return str(value).zfill(pad)
    if isinstance(value, dt.date):
        return value.isoformat()
    return escape_path_name(value)


@st.composite
def trees(draw):
    names = draw(st.permutations(list(COLUMNS)).map(lambda p: p[: draw(st.integers(1, 3))]))
    rows = draw(st.lists(st.tuples(*[values_for(n) for n in names]), min_size=1, max_size=40,
                         unique=True))
    pads = {n: draw(st.integers(1, 3)) for n in names}
    files_per_partition = draw(st.sampled_from([1, 1, 2, 600, 2500]))
    return list(names), rows, pads, files_per_partition


def atoms(name: str) -> st.SearchStrategy[Expr]:
    c = col(name)
    v = values_for(name, nullable=False)
    vs = st.lists(v, min_size=1, max_size=4)
    strategies = [
        v.map(lambda x: c == x), v.map(lambda x: c != x), v.map(lambda x: c < x),
        v.map(lambda x: c <= x), v.map(lambda x: c > x), v.map(lambda x: c >= x),
        vs.map(c.isin), st.just(c.is_null()), st.just(c.is_not_null()),
        st.tuples(v, v).map(lambda ab: c.between(min(ab), max(ab))),
    ]
    if name == "s":
        strategies.append(st.sampled_from(["a", "ab", "u", "N", "x"]).map(c.startswith))
    return st.one_of(strategies)


def predicates(names: list[str]) -> st.SearchStrategy[Expr]:
    leaf = st.one_of([atoms(n) for n in names])
    return st.recursive(leaf, lambda inner: st.one_of(
        st.tuples(inner, inner).map(lambda ab: ab[0] & ab[1]),
        st.tuples(inner, inner).map(lambda ab: ab[0] | ab[1]),
        inner.map(lambda e: ~e)), max_leaves=4)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data(), tree=trees())
def test_scan_matches_brute_force(s3_server, data, tree):
    bucket = s3_server.create_bucket(f"prop-{uuid.uuid4().hex[:12]}")
    try:
        check_tree(s3_server, bucket, data, tree)
    finally:
        s3_server.drop_bucket(bucket)


def check_tree(s3_server, bucket, data, tree):
    names, rows, pads, per_partition = tree
    root = f"t{next(_counter)}"
    objects, truth = {}, []
    for row in rows:
        directory = "/".join(f"{n}={spell(v, pads[n])}" for n, v in zip(names, row, strict=True))
        for i in range(per_partition if row == rows[0] else min(per_partition, 2)):
            key = f"{root}/{directory}/part-{i}.parquet"
            objects[key] = b""
            truth.append((f"s3://{bucket}/{key}", dict(zip(names, row, strict=True))))
    objects[f"{root}/_SUCCESS"] = b""
    s3_server.put_objects_fast(bucket, objects)
    table = ListingTable.open(f"s3://{bucket}/{root}", storage_options=s3_server.storage_options,
                              partition_cols=[(n, COLUMNS[n]) for n in names],
                              schema=pa.schema([("x", pa.int64())]))
    flat = table.scan().metrics["list_requests"]
    for _ in range(3):
        predicate = data.draw(predicates(names))
        bound = [b.expr for b in table.bind(predicate)]
        plan = table.scan(where=predicate)
        want = sorted(path for path, values in truth if all(is_true(c, values) for c in bound))
        assert sorted(f.path for f in plan.files) == want, (str(predicate), plan.listing_plan)
        for f in plan.files:
            assert dict(f.partition_values) == dict(truth[[p for p, _ in truth].index(f.path)][1])
        assert plan.metrics["list_requests"] <= flat, (str(predicate), plan.listing_plan)
