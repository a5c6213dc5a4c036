"""The `leveret` command: `leveret server` runs a node, `leveret ctl` drives one."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import textwrap
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

from ..config import ENV_PREFIX, SETTINGS, Config, ConfigError
from ..sysexits import EX_CANTCREAT, EX_CONFIG, EX_USAGE
from .ctl import add_ctl_parser, run_ctl
from .local_cluster import add_local_cluster_parser, run_local_cluster
from .logs import configure_logging

# The configuration file's own variable (the file cannot name itself).
CONFIG_VARIABLE = ENV_PREFIX + "CONFIG"
# The defaults as help shows them: the machine's host name would make the help vary by machine.
_HELP_DEFAULTS = Config(node_name="leveret@<hostname>")
_HELP_WIDTH = 79

log = logging.getLogger("leveret")


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit with 64 (EX_USAGE), not argparse's 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(EX_USAGE, f"leveret: {message} (see {self.prog} --help)\n")


def _package_version() -> str:
    try:
        return version("leveret")
    except PackageNotFoundError:  # running from a checkout that was never installed
        from .. import __version__

        return __version__


def _server_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """`leveret server`'s flags and help, made from the table of settings in leveret.config."""
    server = sub.add_parser(
        "server",
        help="run a node",
        description=_wrapped(
            "Run a Leveret node. Every flag also has a LEVERET_* environment variable and a key "
            "in the --config TOML file; flags win over the environment, which wins over the file."
        ),
        epilog=_keys_without_flags(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name, setting in SETTINGS.items():
        if setting.flag:
            server.add_argument(
                "--" + name.replace("_", "-"),
                action="append" if setting.repeatable else "store",
                metavar=setting.metavar or name.split("_")[-1].upper(),
                help=f"{setting.help} ({_default_and_variable(name)})",
            )
    server.add_argument(
        "--config",
        metavar="FILE",
        help=f"TOML configuration file (default: none; {CONFIG_VARIABLE})",
    )


def _default_and_variable(name: str) -> str:
    setting = SETTINGS[name]
    default = getattr(_HELP_DEFAULTS, name)
    shown = setting.default_text or ("none" if default is None else default)
    return f"default: {shown}; {ENV_PREFIX}{name.upper()}"


def _keys_without_flags() -> str:
    lines = ["settings for the --config file and the environment only:"]
    for name, setting in SETTINGS.items():
        if not setting.flag:
            text = f"{name}: {setting.help} ({_default_and_variable(name)}); {setting.accepted}"
            lines.append(_wrapped(text, indent="  ", hang="      "))
    return "\n".join(lines)


def _wrapped(text: str, indent: str = "", hang: str = "") -> str:
    # Raw help keeps the layout of the key list, so the prose is wrapped here instead.
    return textwrap.fill(text, _HELP_WIDTH, initial_indent=indent, subsequent_indent=hang or indent)


def _run_server(args: argparse.Namespace) -> int:
    overrides: dict[str, Any] = {
        name: getattr(args, name) for name, setting in SETTINGS.items() if setting.flag
    }
    try:
        config = Config.load(args.config or os.environ.get(CONFIG_VARIABLE), overrides)
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
    from federation.plugin import FederationPlugin

    from ..clustering.plugin import ClusterPlugin
    from ..server.node import Node, StartupError

    async def main() -> None:
        await Node(
            config, clustering=ClusterPlugin, federation=FederationPlugin
        ).run_until_signalled()

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
