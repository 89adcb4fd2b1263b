"""The frameworks crash test's child for wayline's own engine: the crash test's worker
(``wayline.demo.crashtest_worker``) with the frameworks' arguments (``plain``: no key;
``wayline``: ``ctx.effect`` with its derived key), durability ``sync``."""

from __future__ import annotations

import argparse
from pathlib import Path

from wayline.demo import crashtest_worker


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m wayline.demo.frameworks_child")
    p.add_argument("--arm", choices=["plain", "wayline"], required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--service", required=True)
    p.add_argument("--point")
    p.add_argument("--marker")
    p.add_argument("--resume", action="store_true")
    p.add_argument("--out")
    args = p.parse_args(argv)
    forwarded = [
        "--db", str(Path(args.dir) / "runs.db"),
        "--service", args.service,
        "--strategy", "naive" if args.arm == "plain" else "wayline",
        "--mode", "sync",
        "--thread", "order-7",
    ]  # fmt: skip
    if args.point:
        forwarded += ["--kill-point", args.point, "--marker", args.marker]
    if args.resume:
        forwarded.append("--resume")
    if args.out:
        forwarded += ["--out", args.out]
    return crashtest_worker.main(forwarded)


if __name__ == "__main__":
    raise SystemExit(main())
