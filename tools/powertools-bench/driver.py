"""The Powertools side of make bench-idempotency.

Powertools for AWS Lambda (Python)'s idempotency utility,
``idempotent_function`` over ``DynamoDBPersistenceLayer``, driven the way
cmd/benchidem drives this project's library (internal/idembench): the
same scenarios, requests, workers and checks. It speaks
internal/idembench's protocol: a JSON line naming the side and its
versions, then, for each command read from stdin (one JSON line), one
result on stdout (one JSON line). Nothing else goes to stdout.

    .tools/powertools/bin/python tools/powertools-bench/driver.py \\
        --endpoint http://127.0.0.1:PORT --table NAME

The table has the partition key ``id`` (a string) and Time to Live on
``expiration``, Powertools' defaults. Calls to DynamoDB are counted with
botocore's ``before-call.dynamodb.*`` event: one per operation, before
botocore's retries. Every answer is checked against the scenario's
expected outcome, and the first unexpected one fails the command.

Workers are threads of this one process, as ours's are goroutines of its
one process.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import itertools
import json
import platform
import sys
import threading
import time
import traceback

import boto3
from botocore.config import Config

from aws_lambda_powertools.utilities.idempotency import (
    DynamoDBPersistenceLayer,
    IdempotencyConfig,
    idempotent_function,
)
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)

# Settings shared with internal/idembench (goside.go).
KEY_PREFIX = "bench"  # ours: Scope
RETENTION_SECONDS = 3600  # ours: Retention
LEASE_MILLIS = 60_000  # ours: Lease; here the fake context's remaining time
CACHE_SIZE = 1024  # ours: CacheSize
AMOUNT = 100
MISMATCH_AMOUNT = 200

# Scenarios this side runs (internal/idembench.Scenarios): whether the
# requests go round a pool of keys made ready beforehand, whether each
# request takes a key of its own that failed once beforehand, and whether
# the handler fails.
SCENARIOS = {
    "new": {"pool": False, "failed_first": False, "fail": False},
    "duplicate": {"pool": True, "failed_first": False, "fail": False},
    "cached": {"pool": True, "failed_first": False, "fail": False},
    "in-flight": {"pool": True, "failed_first": False, "fail": False},
    "error": {"pool": False, "failed_first": False, "fail": True},
    "retry-error": {"pool": False, "failed_first": True, "fail": True},
    "mismatch": {"pool": True, "failed_first": False, "fail": False},
}


class Declined(Exception):
    """The handler's error in the error scenarios."""


class Unexpected(Exception):
    """An answer the scenario does not expect."""


class FakeLambdaContext:
    """What idempotent_function needs of a Lambda context (registered with
    IdempotencyConfig.register_lambda_context): the remaining time, from
    which Powertools sets a call's in-progress expiry. Each call is taken
    for a fresh invocation of a function with a 60 s timeout."""

    function_name = "bench-idempotency"
    function_version = "$LATEST"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:bench-idempotency"
    memory_limit_in_mb = 1024
    aws_request_id = "bench"
    log_group_name = "/aws/lambda/bench-idempotency"
    log_stream_name = "bench"

    def get_remaining_time_in_millis(self) -> int:
        return LEASE_MILLIS


class CallCounter:
    """Counts a client's calls by operation (before-call.dynamodb.*)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ops: dict[str, int] = {}

    def __call__(self, model, **kwargs) -> None:
        with self._lock:
            self._ops[model.name] = self._ops.get(model.name, 0) + 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._ops)


class Counter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.value = 0

    def add(self) -> None:
        with self._lock:
            self.value += 1


def key(prefix: str, pooled: bool, pool: int, i: int) -> str:
    """internal/idembench.Key."""
    return f"{prefix}-p{i % pool}" if pooled else f"{prefix}-{i}"


def measure(workers: int, n: int, request) -> tuple[list[int], int]:
    """Sends requests 0 to n-1 from `workers` closed-loop threads; returns
    each request's latency in ns (in request order) and the wall time. The
    first error stops the workers and is raised."""
    lat = [0] * n
    nxt = itertools.count()
    failed: list[Exception] = []

    def loop() -> None:
        while not failed:
            i = next(nxt)
            if i >= n:
                return
            t = time.perf_counter_ns()
            try:
                request(i)
            except Exception as exc:  # noqa: BLE001 - reported to the benchmark
                failed.append(exc)
                return
            lat[i] = time.perf_counter_ns() - t

    threads = [threading.Thread(target=loop) for _ in range(workers)]
    start = time.perf_counter_ns()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter_ns() - start
    if failed:
        raise failed[0]
    return lat, elapsed


class PowertoolsSide:
    def __init__(self, endpoint: str, table: str) -> None:
        self.table = table
        session = boto3.session.Session()
        self.client = session.client(
            "dynamodb",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="local",
            aws_secret_access_key="local",
            config=Config(max_pool_connections=64),
        )
        self.calls = CallCounter()
        self.client.meta.events.register("before-call.dynamodb.*", self.calls)
        self.runs = Counter()

    def run(self, cmd: dict) -> dict:
        name = cmd["scenario"]
        if name not in SCENARIOS:
            raise ValueError(f"the Powertools side does not run scenario {name!r}")
        sc = SCENARIOS[name]
        workers, requests, warmup, pool, prefix = (
            cmd["workers"], cmd["requests"], cmd["warmup"], cmd["pool"], cmd["prefix"],
        )

        # One persistence layer and function per command, as ours makes one
        # Idempotency per command: a fresh local cache each time.
        config = IdempotencyConfig(
            event_key_jmespath="id",
            payload_validation_jmespath="@",
            expires_after_seconds=RETENTION_SECONDS,
            use_local_cache=name == "cached",
            local_cache_max_items=CACHE_SIZE,
        )
        config.register_lambda_context(FakeLambdaContext())
        store = DynamoDBPersistenceLayer(table_name=self.table, boto3_client=self.client)

        holder = threading.local()
        entered = threading.Semaphore(0)
        release = threading.Event()

        def handler(order: dict) -> dict:
            self.runs.add()
            if getattr(holder, "holds", False):
                entered.release()
                release.wait()
            if sc["fail"]:
                raise Declined("declined")
            return {"id": order["id"], "amount": order["amount"], "status": "ok"}

        fn = idempotent_function(
            data_keyword_argument="order", persistence_store=store, config=config, key_prefix=KEY_PREFIX,
        )(handler)

        # Prepare the keys: a pool of completed or held keys, or a failed
        # key for each request.
        def prepare(k: str) -> None:
            try:
                fn(order={"id": k, "amount": AMOUNT})
            except Declined:
                pass

        holders: list[threading.Thread] = []
        holder_errors: list[Exception] = []

        def hold(order: dict) -> None:
            holder.holds = True
            try:
                fn(order=order)
            except Exception as exc:  # noqa: BLE001 - reported below
                if not release.is_set():
                    holder_errors.append(exc)
                    entered.release()
                return
            if not release.is_set():  # it never waited in the handler
                holder_errors.append(Unexpected(f"{order['id']}: the held call ended before it was released"))
                entered.release()

        warm = prefix if sc["pool"] else prefix + "-w"
        try:
            if sc["pool"]:
                for p in range(pool):
                    k = key(prefix, True, pool, p)
                    if name == "in-flight":
                        t = threading.Thread(target=hold, args=({"id": k, "amount": AMOUNT},))
                        t.start()
                        holders.append(t)
                        continue
                    prepare(k)
                for _ in holders:
                    if not entered.acquire(timeout=60):
                        raise Unexpected("a held call did not reach its handler in 60 s")
                if holder_errors:
                    raise holder_errors[0]
            elif sc["failed_first"]:
                measure(workers, warmup, lambda i: prepare(key(warm, False, pool, i)))
                measure(workers, requests, lambda i: prepare(key(prefix, False, pool, i)))

            def request(k: str) -> None:
                order = {"id": k, "amount": MISMATCH_AMOUNT if name == "mismatch" else AMOUNT}
                want = {"id": k, "amount": AMOUNT, "status": "ok"}
                try:
                    out = fn(order=order)
                except IdempotencyAlreadyInProgressError:
                    if name == "in-flight":
                        return
                    raise
                except Declined:
                    if sc["fail"]:
                        return
                    raise
                except IdempotencyValidationError:
                    if name == "mismatch":
                        return
                    raise
                if name not in ("new", "duplicate", "cached") or out != want:
                    raise Unexpected(f"{k}: got {out!r}; the scenario {name} does not expect an answer like it")

            measure(workers, warmup, lambda i: request(key(warm, sc["pool"], pool, i)))
            calls, runs = self.calls.snapshot(), self.runs.value
            lat, elapsed = measure(workers, requests, lambda i: request(key(prefix, sc["pool"], pool, i)))
            after = self.calls.snapshot()
            return {
                "scenario": name,
                "latencies_ns": lat,
                "elapsed_ns": elapsed,
                "calls": {op: n - calls.get(op, 0) for op, n in after.items() if n != calls.get(op, 0)},
                "handler_runs": self.runs.value - runs,
            }
        finally:
            release.set()
            for t in holders:
                t.join()


def versions() -> dict[str, str]:
    v = {"python": platform.python_version()}
    for dist in ("aws-lambda-powertools", "boto3", "botocore"):
        v[dist] = importlib.metadata.version(dist)
    return v


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", required=True, help="DynamoDB Local's URL")
    parser.add_argument("--table", required=True, help="the table: partition key id (S), TTL on expiration")
    args = parser.parse_args()
    side = PowertoolsSide(args.endpoint, args.table)
    out = sys.stdout
    out.write(json.dumps({"side": "powertools", "versions": versions()}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        cmd: dict = {}
        try:
            cmd = json.loads(line)
            res = side.run(cmd)
        except Exception as exc:  # noqa: BLE001 - the benchmark reports it
            traceback.print_exc(file=sys.stderr)
            res = {"scenario": cmd.get("scenario", ""), "error": f"{type(exc).__name__}: {exc}"}
        out.write(json.dumps(res) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
