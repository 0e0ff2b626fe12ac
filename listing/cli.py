"""The ``listing`` command: look at a table from the shell, or run the demo.

    listing schema s3://lake/events/ --storage-option endpoint_url=http://127.0.0.1:5000
    listing ls s3://lake/events/ --where "date = '2026-03-01'"
    listing explain s3://lake/events/ --where "date >= '2026-03-01' AND amount > 10"
    listing watch s3://lake/events/ --interval 30s
    listing recover s3://lake/events/
    listing cleanup s3://lake/events/ --older-than 86400
    listing demo
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter
from typing import Any

from listing.errors import ListingError, OptionError

EPILOG = """storage options come from one allowlist per protocol (docs: Storage options
reference); on s3:// endpoint_url, key, secret, token, anon=true, client_kwargs={"region_name":
"eu-west-1"}, config_kwargs, s3_additional_kwargs (values are JSON when they parse); and on
every protocol max_retries=4, retry_mode=standard|adaptive, retry_max_backoff=20s,
on_file_change=error|read. Secrets are never printed. Errors are one line on stderr and
exit status 2."""


def _storage_options(pairs: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise OptionError(f"--storage-option wants KEY=VALUE, got {pair!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def _open(args: argparse.Namespace) -> Any:
    from listing import ListingTable
    from listing.options import registry

    return ListingTable.open(args.url, format=args.format,
                             storage_options=_storage_options(args.storage_option),
                             partition_cols=registry.option("partition_cols").parse(
                                 args.partition_cols or ""),
                             layout=args.layout, layout_projection=args.layout_projection)


_progress_shown = False  # a progress line is open on stderr (ended before an error)


def _progress(enabled: bool) -> Any:
    def show(requests: int, keys: int) -> None:
        global _progress_shown
        _progress_shown = True
        print(f"\rlisted {keys:,} keys in {requests:,} requests", end="", file=sys.stderr,
              flush=True)
    return show if enabled else None


def cmd_schema(args: argparse.Namespace) -> None:
    table = _open(args)
    print(f"table: {table.url}  format: {table.format.name}")
    parts = set(table.partition_names)
    for f in table.schema:
        print(f"  {f.name}: {f.type}{'  (partition)' if f.name in parts else ''}")
    print(f"opened with {table.open_metrics['list_requests']} LIST requests, "
          f"{table.open_metrics['data_files_opened']} data file(s) read")


def cmd_ls(args: argparse.Namespace) -> None:
    table = _open(args)
    plan = table.scan(where=args.where, progress=_progress(not args.quiet))
    if not args.quiet:
        print(file=sys.stderr)
    partitions: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    for f in plan.files:
        name = "/".join(f"{k}={v}" for k, v in f.partition_values.items())
        partitions[name] += 1
        sizes[name] += f.size
    if args.partitions:
        for name, n in sorted(partitions.items()):
            print(f"{name or '(unpartitioned)'}\t{n} files\t{sizes[name]:,} bytes")
    else:
        for f in plan.files:
            print(f"{f.size:>12,}  {f.path}")
    m = plan.metrics
    # partitions the plan never listed are not "pruned" ones: show the listing plan instead
    listed = plan.listing_plan[0] if plan.listing_plan else "nothing listed"
    print(f"{len(plan.files)} files in {len(partitions)} partitions; "
          f"{m['list_requests']} LIST requests, {m['files_listed']} keys listed "
          f"({m['partitions_pruned']} of the listed partitions filtered out); plan: {listed}",
          file=sys.stderr)


def cmd_explain(args: argparse.Namespace) -> None:
    table = _open(args)
    columns = args.columns.split(",") if args.columns else None
    plan = table.scan(columns=columns, where=args.where, limit=args.limit,
                      progress=_progress(not args.quiet))
    if not args.quiet:
        print(file=sys.stderr)
    print(plan.explain())


def cmd_watch(args: argparse.Namespace) -> None:
    """Print new files as they appear: each trigger lists after the last key seen (plus
    the lookback window), as ``spark.readStream.format("listing")`` does."""
    import time
    from pathlib import Path

    from listing.options import registry

    interval = registry.kind_value("duration", args.interval, "--interval")
    options = {k: v for k, v in (("lookback", args.lookback),
                                 ("reconcile_every", args.reconcile_every),
                                 ("starting", args.starting)) if v is not None}
    discovery = _open(args).discovery(where=args.where, **options)
    state = Path(args.offset_file) if args.offset_file else None
    offset: Any = None
    if state is not None and state.exists():
        try:
            offset = json.loads(state.read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise OptionError(f"--offset-file {state}: not a saved offset ({err})") from None
    trigger = 0
    try:
        while args.count is None or trigger < args.count:
            if trigger:
                time.sleep(interval)
            trigger += 1
            found = discovery.new_files(offset)
            for f in found.files:
                print(f"{f.size:>12,}  {f.path}", flush=True)
            m = found.metrics
            if not args.quiet:
                print(f"trigger {trigger}: {len(found.files)} new files "
                      f"({m.get('late_files', 0)} late), {m['list_requests']} LIST requests"
                      f"{' (full listing)' if m['full_listing'] else ''}", file=sys.stderr,
                      flush=True)
            offset = found.offset
            if state is not None:
                try:
                    state.write_text(json.dumps(offset.to_json()))
                except OSError as err:
                    raise OptionError(f"--offset-file {state}: cannot save the offset "
                                      f"({err})") from None
    except KeyboardInterrupt:
        pass


DEMO_WHERE = "date BETWEEN '2026-03-01' AND '2026-03-03' AND region = 'us' AND amount > 10"
DEMO_START = "2025-01-01"  # the demo table's first day


def demo_where(days: int) -> str:
    """The demo's default filter: three days of March 2026 when the table reaches them,
    else its last three days (the query always has rows)."""
    import datetime as dt

    last = dt.date.fromisoformat(DEMO_START) + dt.timedelta(days=days - 1)
    if last >= dt.date(2026, 3, 3):
        return DEMO_WHERE
    first = max(last - dt.timedelta(days=2), dt.date.fromisoformat(DEMO_START))
    return f"date BETWEEN '{first}' AND '{last}' AND region = 'us' AND amount > 10"


def cmd_recover(args: argparse.Namespace) -> int:
    """Report each job found; exit status 1 and one ``error:`` line when any manifest,
    lock or staging directory was refused (left in place)."""
    from listing.write import LOCK_FILE, WriteJob

    done = WriteJob.recover(args.url, _storage_options(args.storage_option),
                            older_than=args.older_than)
    refused = 0
    for job_id, what in done:
        if what.startswith("refused: "):
            refused += 1
            if job_id == LOCK_FILE:
                print(_printable(f"lock {LOCK_FILE}: refused, left in place: {what[9:]}"))
                continue
            what = f"manifest refused, left in place and not followed: {what[9:]}"
        print(_printable(f"job {job_id}: {what}"))
    print(f"{len(done)} job(s) found under {args.url.rstrip('/')}/_temporary/")
    if refused:
        print(f"error: {refused} manifest(s), lock(s) or staging director(ies) refused under "
              f"{args.url.rstrip('/')}/: none of them could have been written by a job of "
              "this table; they are left in place: check them, then delete them by hand",
              file=sys.stderr)
        return 1
    return 0


def _printable(text: str) -> str:
    """``text`` with what no encoding can print (a lone surrogate from a file name)
    escaped, so a report line never fails."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cmd_cleanup(args: argparse.Namespace) -> None:
    from listing.write import WriteJob

    aborted = WriteJob.cleanup(args.url, _storage_options(args.storage_option),
                               older_than=args.older_than)
    for path in aborted:
        print(_printable(f"aborted the upload of s3://{path}"))
    print(f"{len(aborted)} multipart upload(s) aborted under {args.url}")


def cmd_demo(args: argparse.Namespace) -> None:
    from listing.demo import run

    if args.days < 1:
        raise ListingError(f"--days {args.days}: the demo table needs at least one day")
    run(days=args.days, where=args.where or demo_where(args.days))


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("spark-listing")
    except PackageNotFoundError:
        return "unknown (not installed)"


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error as one line ``error: …`` (exit status 2) like every
    other error of the command, pointing at the command's ``--help``."""

    def error(self, message: str) -> Any:
        self.exit(2, f"error: {message} (see: {self.prog} --help)\n")


def _flag_hint(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """`` (did you mean '--x'?)`` for the first unknown flag in ``extra``: the closest of
    the flags ``parser`` takes, by the hint every unknown option carries."""
    from listing.options import did_you_mean

    flags = [s for action in parser._actions for s in action.option_strings
             if s.startswith("--")]
    given = next((e.partition("=")[0] for e in extra if e.startswith("--")), None)
    return did_you_mean(given, flags) if given else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="listing", description="List, inspect and plan Hive-partitioned tables on any "
        "fsspec store (S3 and more), as the listing Spark source would.", epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    def table_command(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text, epilog=EPILOG,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(parser=p)
        p.add_argument("url", help="table root: s3://bucket/prefix/, any fsspec URL, or a path")
        p.add_argument("--format", default="parquet",
                       help="file format: parquet, csv, json, arrow, or a registered/"
                            "entry-point format name (default: parquet)")
        p.add_argument("--storage-option", action="append", default=[], metavar="KEY=VALUE",
                       help="an allowlisted storage option; repeat for several")
        p.add_argument("--partition-cols", metavar="NAME[:TYPE],...",
                       help="declare partition columns (and types) instead of inferring them")
        p.add_argument("--layout", metavar="TEMPLATE",
                       help="path template of a table that is not Hive-partitioned, e.g. "
                            "'{date:yyyy/MM/dd}/{hour:HH}' (docs/layouts.md)")
        p.add_argument("--layout-projection", metavar="COL=LOW..HIGH|COL=A|B;...",
                       help="declared values of layout columns, e.g. "
                            "'date=2024-01-01..NOW;region=us-east-1|eu-west-1'")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
        return p

    p = table_command("schema", "print the data and partition columns of a table")
    p.set_defaults(func=cmd_schema)
    p = table_command("ls", "list the files (or partitions) a filter matches, with the "
                            "number of LIST requests it cost")
    p.add_argument("--where", help="SQL predicate in Spark's dialect, e.g. "
                                   "\"date >= '2026-03-01' AND region IN ('us','eu')\"")
    p.add_argument("--partitions", action="store_true",
                   help="one line per matching partition instead of per file")
    p.set_defaults(func=cmd_ls)
    p = table_command("explain", "plan a scan and print its explain(): filters, listing "
                                 "plan, file groups and request counts")
    p.add_argument("--where", help="SQL predicate in Spark's dialect")
    p.add_argument("--columns", help="comma-separated projection")
    p.add_argument("--limit", type=int, help="stop reading after this many rows")
    p.set_defaults(func=cmd_explain)
    p = table_command("watch", "print new files as they appear, listing only after the "
                               "last key seen (and the newest partitions, for late files)")
    p.add_argument("--where", help="SQL predicate on partition columns")
    p.add_argument("--interval", default="10s", help="time between listings (default 10s)")
    p.add_argument("--count", type=int, help="stop after this many listings")
    p.add_argument("--starting", help="earliest, latest (default), or a timestamp")
    p.add_argument("--lookback", help="newest partitions re-listed each time (default 1), "
                                      "or a duration such as 2h")
    p.add_argument("--reconcile-every", help="listings between full listings (default 10; "
                                             "0: never)")
    p.add_argument("--offset-file", metavar="PATH",
                   help="resume from and save the stream's offset (JSON) in this file")
    p.set_defaults(func=cmd_watch, starting="latest")
    p = table_command("recover", "finish or undo the half-done write jobs of a table from "
                                 "their manifests: a job past its commit point is rolled "
                                 "forward, any other rolled back to the old table; run it "
                                 "with no write to the table in progress")
    p.add_argument("--older-than", type=float, default=0.0, metavar="SECONDS",
                   help="roll back only jobs whose manifest is at least this old (default 0)")
    p.set_defaults(func=cmd_recover)
    p = table_command("cleanup", "abort the multipart uploads in progress under a table "
                                 "(S3: files of write jobs that never completed); run it "
                                 "with no write to the table in progress")
    p.add_argument("--older-than", type=float, default=0.0, metavar="SECONDS",
                   help="abort only uploads started at least this long ago (default 0)")
    p.set_defaults(func=cmd_cleanup)
    p = sub.add_parser("demo", description="Start a moto S3 server on 127.0.0.1, write a "
                       "date-partitioned Parquet table over HTTP, plan a pruned scan (explain() "
                       "and request counts), run the same query through Spark's listing "
                       "source, and print rows, Spark's plan and the requests the server saw.",
                       help="start a local S3 server, write a date-partitioned "
                                    "table, and run a pruned Spark query on it")
    p.add_argument("--days", type=int, default=730,
                   help=f"days of data to write, from {DEMO_START} (default 730)")
    p.add_argument("--where", help=f"the query's filter (default: {DEMO_WHERE}; on a "
                                   "table ending before 2026-03-03, its last three days)")
    p.set_defaults(func=cmd_demo, parser=p)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; every error the toolkit raises (bad input, a failing or
    misconfigured store) is one line ``error: …`` on stderr and exit status 2."""
    global _progress_shown
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # named by the subcommand they were given to (argparse names the top level)
        args.parser.error(f"unrecognized arguments: {' '.join(extra)}"
                          f"{_flag_hint(args.parser, extra)}")
    _progress_shown = False
    try:
        code = args.func(args)
    except ListingError as err:
        if _progress_shown:
            print(file=sys.stderr)
        print(f"error: {' '.join(str(err).split())}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `listing ls … | head`: the reader stopped reading
        # Python would report the failed flush of stdout at exit: point it at /dev/null
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except KeyboardInterrupt:
        if _progress_shown:
            print(file=sys.stderr)
        print("interrupted", file=sys.stderr)
        return 130
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
