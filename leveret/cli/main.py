"""The `leveret` command: `leveret server` runs a node, `leveret ctl` drives one."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

from ..config import ENV_PREFIX, SETTINGS, Config, ConfigError
from .ctl import add_ctl_parser, run_ctl
from .local_cluster import add_local_cluster_parser, run_local_cluster
from .logs import configure_logging

# sysexits, as rabbitmqctl and the server's start-up errors use them.
EX_USAGE = 64
EX_CANTCREAT = 73
EX_CONFIG = 78

log = logging.getLogger("leveret")


class _Parser(argparse.ArgumentParser):
    """Usage errors exit with 64 (EX_USAGE) instead of argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(EX_USAGE, f"{self.prog}: error: {message}\n")


def _package_version() -> str:
    try:
        return version("leveret")
    except PackageNotFoundError:  # running from a checkout that was never installed
        from .. import __version__

        return __version__


def _server_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    server = sub.add_parser(
        "server",
        help="run a node",
        description="Run a Leveret node. Every flag also has a LEVERET_* environment variable "
        "and a key in the --config TOML file; flags win over the environment, which wins "
        "over the file.",
    )
    defaults = Config(node_name="leveret@<hostname>")
    for name, setting in SETTINGS.items():
        if not setting.flag:
            continue
        default = getattr(defaults, name)
        shown = setting.default_text or ("none" if default is None else default)
        server.add_argument(
            "--" + name.replace("_", "-"),
            metavar=name.split("_")[-1].upper(),
            help=f"{setting.help} (default: {shown}; {ENV_PREFIX}{name.upper()})",
        )
    server.add_argument(
        "--join",
        action="append",
        metavar="HOST:PORT",
        help=f"join the cluster of the node there; repeatable ({ENV_PREFIX}JOIN, comma-separated)",
    )
    server.add_argument("--config", metavar="FILE", help="TOML configuration file")


def _run_server(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {
        name: getattr(args, name) for name, setting in SETTINGS.items() if setting.flag
    }
    overrides["join"] = args.join
    try:
        config = Config.load(args.config, overrides)
    except ConfigError as error:
        return _refuse(EX_CONFIG, str(error))
    debug = config.log_level == "debug"
    if not debug:
        # gRPC's C core prints its own lines (a port it cannot bind, say) to stderr; the node
        # says what went wrong itself.
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")
    try:
        configure_logging(config.log_level, config.log_format, config.log_file)
    except OSError as error:
        problem = f"cannot open the log file {config.log_file}: {error.strerror}"
        return _refuse(EX_CANTCREAT, problem)
    from ..server.node import Node, StartupError

    async def main() -> None:
        await Node(config).run_until_signalled()

    try:
        try:
            import uvloop
        except ImportError:  # uvloop is optional: the standard loop works, a little slower
            asyncio.run(main())
        else:
            uvloop.run(main())
    except StartupError as error:
        if debug:
            log.exception("the node could not start")
        return _refuse(error.exit_code, error.text)
    return 0


def _refuse(code: int, text: str) -> int:
    """One line on stderr, and the exit code that says what kind of failure it was."""
    print(f"leveret: {text}", file=sys.stderr)
    return code


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="leveret", description="Leveret message broker")
    parser.add_argument("--version", action="version", version=f"leveret {_package_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _server_parser(sub)
    add_ctl_parser(sub)
    add_local_cluster_parser(sub)
    args = parser.parse_args(argv)
    if args.command == "server":
        return _run_server(args)
    if args.command == "ctl":
        return run_ctl(args)
    if args.command == "local-cluster":
        return run_local_cluster(args)
    parser.error(f"unknown command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
