"""The `leveret` command: `leveret server` runs a node."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from ..config import Config
from .ctl import add_ctl_parser, run_ctl


def _server_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    server = sub.add_parser("server", help="run a node")
    server.add_argument("--node-name")
    server.add_argument("--data-dir")
    server.add_argument("--bind", help="address to listen on (default 0.0.0.0)")
    server.add_argument("--amqp-port", type=int)
    server.add_argument("--mgmt-port", type=int)
    server.add_argument("--cluster-port", type=int)
    server.add_argument("--join", action="append", metavar="HOST:PORT")
    server.add_argument("--cluster-secret-file", metavar="FILE", help="the shared cluster secret")
    server.add_argument("--config", metavar="FILE", help="TOML configuration file")
    server.add_argument(
        "--ports-file", metavar="FILE", help="write the bound ports as JSON once ready"
    )
    server.add_argument("--log-level")


def _run_server(args: argparse.Namespace) -> int:
    overrides = {
        "node_name": args.node_name,
        "data_dir": args.data_dir,
        "bind": args.bind,
        "amqp_port": args.amqp_port,
        "mgmt_port": args.mgmt_port,
        "cluster_port": args.cluster_port,
        "join": args.join,
        "cluster_secret_file": args.cluster_secret_file,
        "ports_file": args.ports_file,
        "log_level": args.log_level,
    }
    config = Config.load(args.config, overrides)
    logging.basicConfig(
        level=config.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    from ..server.node import Node

    async def main() -> None:
        await Node(config).run_until_signalled()

    try:
        import uvloop
    except ImportError:  # uvloop is optional: the standard loop works, a little slower
        asyncio.run(main())
    else:
        uvloop.run(main())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="leveret", description="Leveret message broker")
    sub = parser.add_subparsers(dest="command", required=True)
    _server_parser(sub)
    add_ctl_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "server":
        return _run_server(args)
    if args.command == "ctl":
        return run_ctl(args)
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":
    sys.exit(main())
