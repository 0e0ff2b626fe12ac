"""The background part uploads of a multipart file: at most ``UPLOAD_PARTS`` filled parts
held for sending per process (the memory bound), reached while the writer goes on, and
the parts recorded in order (no S3: the requests are futures this test completes)."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from listing.storage import multipart


def test_parts_in_flight_reach_the_bound_and_never_pass_it(monkeypatch):
    monkeypatch.setattr(multipart, "UPLOAD_PARTS", 2)
    lock = threading.Condition()
    pending: list[tuple[Future, int, int]] = []
    seen = {"max_parts": 0, "max_bytes": 0, "calls": []}
    closing = threading.Event()

    def fake(fs, operation, url, method, **kwargs):
        future: Future = Future()
        seen["calls"].append(method)
        if method == "create_multipart_upload":
            future.set_result({"UploadId": "u-1"})
            return future
        with lock:
            pending.append((future, kwargs["PartNumber"], len(kwargs["Body"])))
            seen["max_parts"] = max(seen["max_parts"], len(pending))
            seen["max_bytes"] = max(seen["max_bytes"], sum(n for _, _, n in pending))
            lock.notify_all()
        return future

    def complete() -> None:  # a part ends only once the bound is reached (or at the end)
        while True:
            with lock:
                lock.wait_for(lambda: len(pending) >= 2 or closing.is_set(), timeout=10)
                if not pending:
                    if closing.is_set():
                        return
                    continue
                future, number, _ = pending.pop(0)
            future.set_result({"ETag": f"e{number}"})

    monkeypatch.setattr(multipart, "s3_request_future", fake)
    completer = threading.Thread(target=complete, daemon=True)
    completer.start()
    f = multipart.MultipartFile(None, "bucket/key", part_size=1000)
    for _ in range(11):  # 7,700 bytes: 7 full parts, then the last at close
        f.write(b"x" * 700)
    f.close()
    with lock:
        closing.set()
        lock.notify_all()
    parts = f.wait()
    completer.join(10)
    assert parts == [(n, f"e{n}") for n in range(1, 9)]
    assert seen["max_parts"] == 2  # reached: the writer did not wait for each part
    assert seen["max_bytes"] <= 2 * 1000  # the memory held for sending: 2 parts
    assert seen["calls"].count("upload_part") == 8 and f.size == 7700


def test_a_failed_part_is_raised_once_no_part_of_the_file_is_in_flight(monkeypatch):
    futures: list[Future] = []

    def fake(fs, operation, url, method, **kwargs):
        future: Future = Future()
        if method == "create_multipart_upload":
            future.set_result({"UploadId": "u-1"})
        else:
            futures.append(future)
        return future

    monkeypatch.setattr(multipart, "s3_request_future", fake)
    f = multipart.MultipartFile(None, "bucket/key", part_size=1000)
    f.write(b"x" * 2500)
    f.close()
    assert len(futures) == 3
    futures[0].set_exception(OSError("part 1 failed"))
    ended = []
    timer = threading.Timer(0.2, lambda: (ended.append(1), futures[1].set_result({"ETag": "a"}),
                                          futures[2].set_result({"ETag": "b"})))
    timer.start()
    try:
        f.wait()
    except OSError as err:
        assert "part 1 failed" in str(err)
        assert ended and all(x.done() for x in futures)  # raised after the others ended
    else:
        raise AssertionError("the failed part was not raised")
    timer.join()
