"""The fault-injecting S3 proxy, checked over real HTTP against the moto server (no mocks).

Clients that must see every fault use ``retries={"total_max_attempts": 1}``: in botocore's
default legacy retry mode ``max_attempts`` counts retries, so ``{"max_attempts": 1}``
still retries once.
"""

from __future__ import annotations

import http.client
import io
import json
import random
import socket
import threading
import time
import urllib.parse
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import fsspec
import pytest
from botocore.config import Config
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ReadTimeoutError,
    ResponseStreamingError,
)

from listing.testing.faults import MAX_DELAY, FaultProxy
from listing.testing.s3 import DUMMY_REGION, S3Server

NO_RETRY = {"retries": {"total_max_attempts": 1}}


@pytest.fixture
def proxy(s3_server: S3Server) -> Iterator[FaultProxy]:
    """A fresh proxy (no rules, zero counters) in front of the session's moto server."""
    with FaultProxy(s3_server.endpoint_url) as proxy:
        yield proxy


def _fs(proxy: FaultProxy) -> Any:
    return fsspec.filesystem(
        "s3", **proxy.storage_options, skip_instance_cache=True, use_listings_cache=False
    )


def _raw(proxy: FaultProxy) -> http.client.HTTPConnection:
    """A plain keep-alive HTTP/1.1 connection to the proxy, to see the exact framing."""
    port = urllib.parse.urlsplit(proxy.endpoint_url).port
    assert port is not None
    return http.client.HTTPConnection("127.0.0.1", port, timeout=10)


def _presigned(client: Any, method: str, bucket: str, key: str) -> str:
    """Path and query of a presigned URL (moto refuses unsigned GETs on a private bucket)."""
    url = client.generate_presigned_url(method, Params={"Bucket": bucket, "Key": key})
    split = urllib.parse.urlsplit(url)
    return f"{split.path}?{split.query}"


def _code(exc: ClientError) -> tuple[str, int]:
    return exc.response["Error"]["Code"], exc.response["ResponseMetadata"]["HTTPStatusCode"]


# --- pass-through ----------------------------------------------------------------------


def test_without_rules_every_operation_returns_what_the_server_holds(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    rng = random.Random(1)
    objects = {
        "d/part=0/empty.bin": b"",
        "d/part=0/small.bin": rng.randbytes(1000),
        "d/part=1/big.bin": rng.randbytes(300_000),  # several 64 KiB relay blocks
    }
    client = proxy.client(**NO_RETRY)
    fs = _fs(proxy)
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        for key, data in objects.items():
            client.put_object(Bucket=s3_bucket, Key=key, Body=data)
        fs.pipe_file(f"{s3_bucket}/d/part=1/s3fs.bin", b"written by s3fs")
        objects["d/part=1/s3fs.bin"] = b"written by s3fs"

        big = rng.randbytes(2 * 2**20)  # a file-like body this big is sent with Expect
        client.put_object(Bucket=s3_bucket, Key="d/part=2/expect.bin", Body=io.BytesIO(big))
        objects["d/part=2/expect.bin"] = big
        conn = _raw(proxy)  # a chunked request body, forwarded chunked
        put_url = _presigned(client, "put_object", s3_bucket, "d/part=2/chunked.bin")
        conn.request("PUT", put_url, body=iter([b"chunk one, ", b"chunk two"]),
                     headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)  # fmt: skip
        assert conn.getresponse().read() == b""
        conn.close()
        objects["d/part=2/chunked.bin"] = b"chunk one, chunk two"

        listed = client.list_objects_v2(Bucket=s3_bucket, Prefix="d/")["Contents"]
        got = {key: client.get_object(Bucket=s3_bucket, Key=key)["Body"].read() for key in objects}
        heads = {key: client.head_object(Bucket=s3_bucket, Key=key) for key in objects}
        ranged = client.get_object(
            Bucket=s3_bucket, Key="d/part=1/big.bin", Range="bytes=70000-70099"
        )
        fs_found = fs.find(f"{s3_bucket}/d/")
        fs_slice = fs.cat_file(f"{s3_bucket}/d/part=1/big.bin", start=5, end=150_000)
        fs_whole = fs.cat_file(f"{s3_bucket}/d/part=1/big.bin")

    direct = s3_server.client()
    truth = direct.list_objects_v2(Bucket=s3_bucket, Prefix="d/")["Contents"]
    assert {o["Key"]: direct.get_object(Bucket=s3_bucket, Key=o["Key"])["Body"].read()
            for o in truth} == objects  # fmt: skip
    assert [(o["Key"], o["Size"], o["ETag"]) for o in listed] == [
        (o["Key"], o["Size"], o["ETag"]) for o in truth
    ]
    assert got == objects
    for o in truth:
        head = heads[o["Key"]]
        assert (head["ContentLength"], head["ETag"]) == (o["Size"], o["ETag"])
    assert ranged["ResponseMetadata"]["HTTPStatusCode"] == 206
    assert ranged["ContentRange"] == "bytes 70000-70099/300000"
    assert ranged["Body"].read() == objects["d/part=1/big.bin"][70000:70100]
    assert fs_found == sorted(f"{s3_bucket}/{key}" for key in objects)
    assert fs_slice == objects["d/part=1/big.bin"][5:150_000]
    assert fs_whole == objects["d/part=1/big.bin"]

    stats = proxy.stats
    assert stats.faults() == 0 and not stats.injected
    # each request reached the server exactly once, and the proxy classified it alike
    assert stats.forwarded == cap.counts()
    assert stats.forwarded["PUT"] == 6 and stats.forwarded["GET"] >= 8


def test_sigv4_signatures_still_validate_through_the_proxy(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    """moto checks SigV4 only with IAM authentication on. The signature covers the Host
    header, so good requests pass only because the proxy forwards the client's Host as
    is; a wrong secret and a Host changed after signing are both refused."""
    import boto3
    from moto.core import enable_iam_authentication

    session = boto3.session.Session()
    iam = session.client(
        "iam",
        endpoint_url=s3_server.endpoint_url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        region_name=DUMMY_REGION,
    )
    user = f"signer-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=user)
    policy = {"Version": "2012-10-17",
              "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}  # fmt: skip
    iam.put_user_policy(UserName=user, PolicyName="s3", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=user)["AccessKey"]

    def signed_client(secret: str) -> Any:
        return session.client(
            "s3",
            endpoint_url=proxy.endpoint_url,
            aws_access_key_id=key["AccessKeyId"],
            aws_secret_access_key=secret,
            region_name=DUMMY_REGION,
            config=Config(**NO_RETRY),
        )

    secret = key["SecretAccessKey"]
    good, bad_secret, bad_host = (
        signed_client(secret),
        signed_client("wrong"),
        signed_client(secret),
    )

    def change_host(request: Any, **_: Any) -> None:
        request.headers["Host"] = "127.0.0.1:1"  # after signing, as a rewriting proxy would

    bad_host.meta.events.register("before-send.s3", change_host)
    with enable_iam_authentication():
        good.put_object(Bucket=s3_bucket, Key="signed.txt", Body=b"signed body")
        assert good.get_object(Bucket=s3_bucket, Key="signed.txt")["Body"].read() == b"signed body"
        assert good.list_objects_v2(Bucket=s3_bucket)["KeyCount"] == 1
        with pytest.raises(ClientError) as wrong_secret:
            bad_secret.get_object(Bucket=s3_bucket, Key="signed.txt")
        with pytest.raises(ClientError) as wrong_host:
            bad_host.get_object(Bucket=s3_bucket, Key="signed.txt")
    assert _code(wrong_secret.value) == ("SignatureDoesNotMatch", 403)
    assert _code(wrong_host.value) == ("SignatureDoesNotMatch", 403)
    direct = s3_server.client()
    assert direct.get_object(Bucket=s3_bucket, Key="signed.txt")["Body"].read() == b"signed body"


# --- each fault kind -------------------------------------------------------------------


def test_503_and_500_are_s3_error_answers_that_never_reach_the_server(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    s3_server.put_objects_fast(s3_bucket, {"k/a.bin": b"abc"})
    client = proxy.client(**NO_RETRY)
    proxy.add_rule("GET", "503")
    proxy.add_rule("LIST", "500")
    proxy.add_rule("HEAD", "503")
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        with pytest.raises(ClientError) as get:
            client.get_object(Bucket=s3_bucket, Key="k/a.bin")
        with pytest.raises(ClientError) as listing:
            client.list_objects_v2(Bucket=s3_bucket)
        with pytest.raises(ClientError) as head:
            client.head_object(Bucket=s3_bucket, Key="k/a.bin")
        client.put_object(Bucket=s3_bucket, Key="k/b.bin", Body=b"put passes")  # no PUT rule
    assert _code(get.value) == ("SlowDown", 503)
    assert "reduce your request rate" in get.value.response["Error"]["Message"]
    assert _code(listing.value) == ("InternalError", 500)
    assert _code(head.value) == ("503", 503)  # HEAD errors carry no body, so no S3 code
    assert cap.counts() == Counter({"PUT": 1})
    stats = proxy.stats
    assert stats.injected == Counter({("GET", "503"): 1, ("LIST", "500"): 1, ("HEAD", "503"): 1})
    assert stats.forwarded == Counter({"PUT": 1})
    assert stats.faults(fault="503") == 2 and stats.faults(op="LIST") == 1
    assert stats.requests == 4  # three answered by the proxy, one forwarded


def test_reset_aborts_the_connection_with_a_tcp_rst(s3_bucket: str, proxy: FaultProxy):
    client = proxy.client(**NO_RETRY)
    client.put_object(Bucket=s3_bucket, Key="r.bin", Body=b"x" * 10)
    proxy.add_rule("GET", "reset")
    with pytest.raises(ConnectionClosedError):
        client.get_object(Bucket=s3_bucket, Key="r.bin")

    conn = _raw(proxy)
    conn.request("GET", _presigned(client, "get_object", s3_bucket, "r.bin"))
    with pytest.raises(ConnectionResetError):  # ECONNRESET, not a clean end of stream
        conn.getresponse()
    conn.close()
    assert proxy.stats.injected == Counter({("GET", "reset"): 2})
    assert proxy.stats.forwarded["GET"] == 0
    assert proxy.stats.requests == 3  # the PUT, and two GETs cut by the proxy


def test_truncate_sends_the_full_length_but_part_of_the_body(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    data = random.Random(2).randbytes(100_000)
    s3_server.put_objects_fast(s3_bucket, {"t.bin": data})
    client = proxy.client(**NO_RETRY)
    proxy.add_rule("GET", "truncate", times=1)
    response = client.get_object(Bucket=s3_bucket, Key="t.bin")
    assert response["ContentLength"] == 100_000
    with pytest.raises(ResponseStreamingError, match="IncompleteRead"):
        response["Body"].read()

    proxy.add_rule("GET", "truncate", times=1, keep_fraction=0.25)
    conn = _raw(proxy)
    conn.request("GET", _presigned(client, "get_object", s3_bucket, "t.bin"))
    raw = conn.getresponse()
    assert (raw.status, raw.getheader("Content-Length")) == (200, "100000")
    with pytest.raises(http.client.IncompleteRead) as short:
        raw.read()
    assert short.value.partial == data[:25_000]
    conn.close()
    # the upstream did answer both, in full; only the relay was cut short
    assert proxy.stats.injected == Counter({("GET", "truncate"): 2})
    assert proxy.stats.forwarded["GET"] == 2
    assert client.get_object(Bucket=s3_bucket, Key="t.bin")["Body"].read() == data


def test_slow_delays_then_relays_and_can_trip_a_read_timeout(s3_bucket: str, proxy: FaultProxy):
    client = proxy.client(**NO_RETRY)
    client.put_object(Bucket=s3_bucket, Key="s.bin", Body=b"slow but sure")
    proxy.add_rule("HEAD", "slow", delay=0.4, times=1)
    start = time.monotonic()
    head = client.head_object(Bucket=s3_bucket, Key="s.bin")
    assert time.monotonic() - start >= 0.4
    assert head["ContentLength"] == len(b"slow but sure")

    proxy.add_rule("GET", "slow", delay=0.6, times=1)
    impatient = proxy.client(read_timeout=0.15, **NO_RETRY)
    start = time.monotonic()
    with pytest.raises(ReadTimeoutError):
        impatient.get_object(Bucket=s3_bucket, Key="s.bin")
    assert time.monotonic() - start < 0.5
    # the client gave up after 0.15 s: on a loaded machine the proxy's thread may only now
    # be reading that request (it counts a fault as it chooses it)
    deadline = time.monotonic() + 5
    while ("GET", "slow") not in proxy.stats.injected and time.monotonic() < deadline:
        time.sleep(0.01)
    assert proxy.stats.injected == Counter({("HEAD", "slow"): 1, ("GET", "slow"): 1})


def test_keep_alive_survives_error_answers_and_ends_after_reset_and_truncate(
    s3_bucket: str, proxy: FaultProxy
):
    client = proxy.client(**NO_RETRY)
    client.put_object(Bucket=s3_bucket, Key="ka.bin", Body=b"0123456789")
    target = _presigned(client, "get_object", s3_bucket, "ka.bin")
    head_target = _presigned(client, "head_object", s3_bucket, "ka.bin")
    proxy.reset_stats()
    conn = _raw(proxy)
    proxy.add_rule("GET", "503", times=1)
    proxy.add_rule("GET", "500", times=1)
    answers = []
    for headers in ({}, {}, {}, {"Range": "bytes=2-4"}):
        conn.request("GET", target, headers=headers)
        response = conn.getresponse()
        answers.append((response.status, response.read()))
    conn.request("HEAD", head_target)
    head = conn.getresponse()
    assert (head.status, head.getheader("Content-Length"), head.read()) == (200, "10", b"")
    assert [status for status, _ in answers] == [503, 500, 200, 206]
    assert b"<Code>SlowDown</Code>" in answers[0][1]
    assert b"<Code>InternalError</Code>" in answers[1][1]
    assert answers[2:] == [(200, b"0123456789"), (206, b"234")]
    assert proxy.stats.connections == 1  # five requests, one connection

    proxy.add_rule("HEAD", "truncate", times=1)  # no body to cut: the connection is reset
    conn.request("HEAD", head_target)
    with pytest.raises(ConnectionResetError):
        conn.getresponse()
    conn.close()
    conn.request("GET", target)  # http.client reconnects
    assert conn.getresponse().read() == b"0123456789"
    assert proxy.stats.connections == 2
    conn.close()


# --- when rules fire -------------------------------------------------------------------


def test_times_fires_on_the_first_n_matches_then_passes_through(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    s3_server.put_objects_fast(s3_bucket, {"n.bin": b"n"})
    client = proxy.client(**NO_RETRY)
    rule = proxy.add_rule("GET", "503", times=3)
    outcomes = []
    for _ in range(6):
        try:
            outcomes.append(client.get_object(Bucket=s3_bucket, Key="n.bin")["Body"].read())
        except ClientError as exc:
            outcomes.append(_code(exc))
    assert outcomes == [("SlowDown", 503)] * 3 + [b"n"] * 3
    assert (rule.matched, rule.fired) == (6, 3)
    assert proxy.stats.injected == Counter({("GET", "503"): 3})
    assert proxy.stats.forwarded == Counter({"GET": 3})


def _pattern(proxy: FaultProxy, client: Any, bucket: str, seed: int, n: int = 24) -> list[bool]:
    """Which of ``n`` sequential HEADs failed under a 50% rule with ``seed``."""
    proxy.clear_rules()
    proxy.add_rule("HEAD", "500", rate=0.5, seed=seed)
    failed = []
    for _ in range(n):
        try:
            client.head_object(Bucket=bucket, Key="p.bin")
            failed.append(False)
        except ClientError:
            failed.append(True)
    return failed


def test_rate_with_a_seed_is_reproducible(s3_server: S3Server, s3_bucket: str, proxy: FaultProxy):
    s3_server.put_objects_fast(s3_bucket, {"p.bin": b"p"})
    client = proxy.client(**NO_RETRY)
    first = _pattern(proxy, client, s3_bucket, seed=7)
    again = _pattern(proxy, client, s3_bucket, seed=7)
    other = _pattern(proxy, client, s3_bucket, seed=8)
    assert first == again
    assert first != other
    assert 0 < sum(first) < len(first)
    assert proxy.stats.faults() == 2 * sum(first) + sum(other)
    assert proxy.stats.forwarded["HEAD"] == 3 * 24 - proxy.stats.faults()


def test_rules_match_on_op_and_path_and_the_first_firing_rule_wins(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    keys = ["t/part=0/a.csv", "t/part=1/a.csv", "t/part=0/a.bin", "t/part=1/a.bin"]
    s3_server.put_objects_fast(s3_bucket, {key: key.encode() for key in keys})
    client = proxy.client(**NO_RETRY)
    proxy.add_rule("GET", "503", path_contains="/part=1/")
    proxy.add_rule(None, "500", path_regex=r"\.csv$")  # any op

    def get(key: str) -> object:
        try:
            return client.get_object(Bucket=s3_bucket, Key=key)["Body"].read()
        except ClientError as exc:
            return _code(exc)[0]

    assert [get(key) for key in keys] == [
        "InternalError",
        "SlowDown",
        b"t/part=0/a.bin",
        "SlowDown",
    ]
    with pytest.raises(ClientError):
        client.head_object(Bucket=s3_bucket, Key="t/part=0/a.csv")  # op=None matched HEAD
    assert client.list_objects_v2(Bucket=s3_bucket, Prefix="t/part=1/")["KeyCount"] == 2
    assert proxy.stats.injected == Counter(
        {("GET", "500"): 1, ("GET", "503"): 2, ("HEAD", "500"): 1}
    )


def test_max_faults_caps_a_rule_and_bad_rules_are_refused(s3_bucket: str, proxy: FaultProxy):
    client = proxy.client(**NO_RETRY)
    client.put_object(Bucket=s3_bucket, Key="m.bin", Body=b"m")
    rule = proxy.add_rule("GET", "503", max_faults=2)  # "always", but at most twice
    failures = 0
    for _ in range(4):
        try:
            client.get_object(Bucket=s3_bucket, Key="m.bin")
        except ClientError:
            failures += 1
    assert (failures, rule.fired, rule.matched) == (2, 2, 4)

    for bad in (
        {"op": "FETCH", "fault": "503"},
        {"op": "GET", "fault": "404"},
        {"op": "GET", "fault": "503", "rate": 1.5},
        {"op": "GET", "fault": "503", "rate": 0.5, "times": 2},
        {"op": "GET", "fault": "slow", "delay": MAX_DELAY + 1},
        {"op": "GET", "fault": "503", "max_faults": 10**6},
        {"op": "GET", "fault": "503", "path_regex": "("},
    ):
        with pytest.raises(ValueError):
            proxy.add_rule(**bad)
    assert len(proxy.rules) == 1
    with pytest.raises(ValueError, match="loopback"):
        FaultProxy("http://example.com:80")


# --- retrying clients ------------------------------------------------------------------


def test_a_retrying_client_reads_exact_bytes_through_30_percent_503s(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    rng = random.Random(3)
    objects = {f"r/{i:02d}.bin": rng.randbytes(rng.randrange(1, 50_000)) for i in range(12)}
    s3_server.put_objects_fast(s3_bucket, objects)
    client = proxy.client(retries={"mode": "standard"})  # 3 attempts, jittered backoff
    rule = proxy.add_rule("GET", "503", rate=0.3, seed=11)
    with s3_server.log.capture(bucket=s3_bucket) as cap:
        got = {key: client.get_object(Bucket=s3_bucket, Key=key)["Body"].read() for key in objects}
    assert got == objects
    injected = proxy.stats.faults("GET", "503")
    assert injected == rule.fired == 3  # seed 11: three GETs fail once, none twice
    assert rule.matched == len(objects) + injected
    assert cap.count("GET") == len(objects) == proxy.stats.forwarded["GET"]


def test_s3fs_recovers_from_one_slowdown_and_one_truncated_body(
    s3_server: S3Server, s3_bucket: str, proxy: FaultProxy
):
    data = random.Random(4).randbytes(80_000)
    s3_server.put_objects_fast(s3_bucket, {"f.bin": data})
    proxy.add_rule("GET", "503", times=1)  # botocore retries this one
    proxy.add_rule("GET", "truncate", times=1)  # s3fs retries this one (body read)
    assert _fs(proxy).cat_file(f"{s3_bucket}/f.bin") == data
    assert proxy.stats.injected == Counter({("GET", "503"): 1, ("GET", "truncate"): 1})
    assert proxy.stats.forwarded["GET"] == 2


# --- lifecycle -------------------------------------------------------------------------


def test_stop_is_prompt_with_open_connections_and_pending_delays(s3_server: S3Server):
    before = set(threading.enumerate())
    proxy = FaultProxy(s3_server.endpoint_url).start()
    port = urllib.parse.urlsplit(proxy.endpoint_url).port
    idle = _raw(proxy)
    idle.connect()  # an idle keep-alive connection the handler thread waits on
    proxy.add_rule(None, "slow", delay=MAX_DELAY)
    errors: list[BaseException] = []

    def slow_request() -> None:
        conn = _raw(proxy)
        try:
            conn.request("GET", "/some-bucket/some-key")
            conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)
        finally:
            conn.close()

    waiter = threading.Thread(target=slow_request, daemon=True)
    waiter.start()
    deadline = time.monotonic() + 5
    while proxy.stats.faults() == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    start = time.monotonic()
    proxy.stop()
    waiter.join(timeout=5)
    assert time.monotonic() - start < 2
    assert not waiter.is_alive() and len(errors) == 1
    assert proxy.stats.forwarded.total() == 0  # the delayed request was never sent on
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    idle.close()
    proxy.stop()  # idempotent
    for _ in range(200):  # every thread the proxy started has ended
        leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
        if not leftover:
            break
        time.sleep(0.01)
    assert leftover == []
