"""TLS settings as RabbitMQ's ssl_options tables, the SSLContexts made from them, and reloads."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import ssl
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger(__name__)

VERIFY_MODES = ("verify_none", "verify_peer")
# RabbitMQ's names for protocol versions (its `versions` list) and what OpenSSL calls them.
VERSIONS: dict[str, ssl.TLSVersion] = {
    "tlsv1.3": ssl.TLSVersion.TLSv1_3,
    "tlsv1.2": ssl.TLSVersion.TLSv1_2,
    "tlsv1.1": ssl.TLSVersion.TLSv1_1,
    "tlsv1": ssl.TLSVersion.TLSv1,
}
# How often the reloader looks at the files' modification times.
POLL_SECONDS = 5.0


class TLSConfigError(ValueError):
    """Settings that cannot make a context; the text names the key, e.g. `ssl_options.verify`."""


@dataclass(frozen=True, slots=True)
class TLSSettings:
    """One ssl_options table, with RabbitMQ's key names and defaults."""

    cacertfile: str | None = None
    certfile: str | None = None
    keyfile: str | None = None
    verify: str = "verify_none"
    fail_if_no_peer_cert: bool = False
    versions: tuple[str, ...] = ()  # empty: what Python's ssl module allows by default
    ciphers: tuple[str, ...] = ()  # OpenSSL names; empty: OpenSSL's defaults
    # Where the settings came from, for messages: "ssl_options", or an upstream's URI.
    origin: str = field(default="ssl_options", compare=False)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(f for f in (self.certfile, self.keyfile, self.cacertfile) if f)


def parse_settings(table: Mapping[str, Any], origin: str = "ssl_options") -> TLSSettings:
    """TLSSettings from a TOML table (or a URI's query parameters, as text).

    Raises TLSConfigError naming the key (`origin.key`), the value and what is accepted.
    """
    values: dict[str, Any] = {}
    for raw_key, value in table.items():
        key = raw_key.replace("-", "_")
        parse = _PARSERS.get(key)
        if parse is None:
            known = ", ".join(_PARSERS)
            raise TLSConfigError(f"unknown key {origin}.{raw_key} (known keys: {known})")
        parser, accepted = parse
        try:
            values[key] = parser(value)
        except (TypeError, ValueError):
            raise TLSConfigError(
                f"invalid {origin}.{raw_key} = {value!r}: expected {accepted}"
            ) from None
    return TLSSettings(origin=origin, **values)


def _file(value: Any) -> str:
    if not isinstance(value, str) or not value or "\0" in value:
        raise ValueError(value)
    return value


def _verify(value: Any) -> str:
    if not isinstance(value, str) or value.lower() not in VERIFY_MODES:
        raise ValueError(value)
    return value.lower()


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ValueError(value)


def _names(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple) or not all(isinstance(i, str) for i in items):
        raise ValueError(value)
    return tuple(item.strip() for item in items if item.strip())


def _versions(value: Any) -> tuple[str, ...]:
    names = tuple(name.lower() for name in _names(value))
    if not names or any(name not in VERSIONS for name in names):
        raise ValueError(value)
    return names


_PARSERS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "cacertfile": (_file, "a PEM file path"),
    "certfile": (_file, "a PEM file path"),
    "keyfile": (_file, "a PEM file path"),
    "verify": (_verify, " | ".join(VERIFY_MODES)),
    "fail_if_no_peer_cert": (_boolean, "true | false"),
    "versions": (_versions, "a list of " + ", ".join(VERSIONS)),
    "ciphers": (_names, "a list of OpenSSL cipher names"),
}


# --- contexts -------------------------------------------------------------------------------


def server_context(settings: TLSSettings) -> ssl.SSLContext:
    """A listener's context: its certificate, and the clients' checked as `verify` says."""
    if not settings.certfile:
        raise TLSConfigError(f"{settings.origin}.certfile is required to accept TLS")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _apply_protocol(context, settings)
    if settings.verify == "verify_peer":
        if not settings.cacertfile:
            raise TLSConfigError(
                f"{settings.origin}.cacertfile is required with verify = verify_peer"
            )
        # RabbitMQ's fail_if_no_peer_cert: without it a client may still come without one.
        context.verify_mode = (
            ssl.CERT_REQUIRED if settings.fail_if_no_peer_cert else ssl.CERT_OPTIONAL
        )
    else:
        context.verify_mode = ssl.CERT_NONE
    load_files(context, settings)
    return context


def client_context(settings: TLSSettings, check_hostname: bool | None = None) -> ssl.SSLContext:
    """An outgoing connection's context: the server checked against `cacertfile` (or the
    system's CAs) unless verify is verify_none, and our certificate when one is given."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _apply_protocol(context, settings)
    if settings.verify == "verify_none":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = True if check_hostname is None else check_hostname
        context.verify_mode = ssl.CERT_REQUIRED
        if not settings.cacertfile:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    load_files(context, settings)
    return context


def _apply_protocol(context: ssl.SSLContext, settings: TLSSettings) -> None:
    if settings.versions:
        chosen = sorted(VERSIONS[name] for name in settings.versions)
        context.minimum_version, context.maximum_version = chosen[0], chosen[-1]
    # TLS 1.3 suites (TLS_AES_...) are always on in OpenSSL and cannot be chosen through
    # Python's ssl module; the list selects among the earlier versions' ciphers.
    legacy = [name for name in settings.ciphers if not name.startswith("TLS_")]
    if legacy:
        try:
            context.set_ciphers(":".join(legacy))
        except ssl.SSLError:
            raise TLSConfigError(
                f"invalid {settings.origin}.ciphers = {list(settings.ciphers)!r}: "
                "OpenSSL knows none of these ciphers"
            ) from None


def load_files(context: ssl.SSLContext, settings: TLSSettings) -> None:
    """Load the certificate, key and CA into `context`; TLSConfigError names the failing key."""
    if settings.certfile:
        try:
            context.load_cert_chain(settings.certfile, settings.keyfile)
        except (OSError, ssl.SSLError) as error:
            key = "certfile" if settings.keyfile is None else "certfile/keyfile"
            raise TLSConfigError(
                f"cannot load {settings.origin}.{key} ({settings.certfile}"
                f"{', ' + settings.keyfile if settings.keyfile else ''}): {_reason(error)}"
            ) from None
    if settings.cacertfile:
        try:
            context.load_verify_locations(cafile=settings.cacertfile)
        except (OSError, ssl.SSLError) as error:
            raise TLSConfigError(
                f"cannot load {settings.origin}.cacertfile ({settings.cacertfile}): "
                f"{_reason(error)}"
            ) from None


def _reason(error: Exception) -> str:
    if isinstance(error, ssl.SSLError):
        return error.reason or str(error)
    if isinstance(error, OSError):
        return error.strerror or str(error)
    return str(error)


# --- reloading ------------------------------------------------------------------------------


@dataclass(slots=True)
class _Registration:
    name: str
    files: tuple[str, ...]
    reload: Callable[[], None]  # raises TLSConfigError, leaving the old certificate in use
    stamps: dict[str, tuple[int, int] | None] = field(default_factory=dict)


class CertificateReloader:
    """Reloads registered certificates on SIGHUP and when one of their files changes.

    A context is reloaded in place (the same SSLContext), so listeners keep it and the next
    handshakes use the new files; connections already open keep theirs. Files are checked on a
    scratch context first: a broken or mismatched file is logged and the old certificate stays.
    Certificate authorities are added to those already trusted: one removed from the file stays
    trusted until the node restarts (OpenSSL cannot forget a loaded CA).
    """

    def __init__(self, poll_seconds: float = POLL_SECONDS) -> None:
        self.poll_seconds = poll_seconds
        self._registrations: list[_Registration] = []
        self._task: asyncio.Task[None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def register_context(self, name: str, context: ssl.SSLContext, settings: TLSSettings) -> None:
        """Keep `context` (made from `settings`) up to date with its files."""

        def reload() -> None:
            # A scratch context proves the files load and match before the live one changes.
            load_files(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER), settings)
            load_files(context, settings)

        self.register(name, settings.files, reload)

    def register(self, name: str, files: Iterable[str], reload: Callable[[], None]) -> None:
        """Call `reload` when one of `files` changes or on SIGHUP; it raises TLSConfigError
        (or OSError) when the new files cannot be used, and then must change nothing."""
        registration = _Registration(name, tuple(files), reload)
        registration.stamps = {path: _stamp(path) for path in registration.files}
        self._registrations.append(registration)

    def reload_all(self, why: str) -> list[tuple[str, str | None]]:
        """Reload everything now; (name, None) for each success, (name, reason) otherwise."""
        results = []
        for registration in self._registrations:
            registration.stamps = {path: _stamp(path) for path in registration.files}
            results.append((registration.name, self._reload(registration, why)))
        return results

    def check(self) -> list[tuple[str, str | None]]:
        """Reload what has a file whose modification time or size changed since last seen."""
        results = []
        for registration in self._registrations:
            stamps = {path: _stamp(path) for path in registration.files}
            if stamps == registration.stamps:
                continue
            changed = [path for path in stamps if stamps[path] != registration.stamps.get(path)]
            registration.stamps = stamps
            why = "changed: " + ", ".join(changed)
            results.append((registration.name, self._reload(registration, why)))
        return results

    def _reload(self, registration: _Registration, why: str) -> str | None:
        try:
            registration.reload()
        except (TLSConfigError, OSError, ssl.SSLError, ValueError) as error:
            log.error(
                "TLS certificate of %s not reloaded (%s): %s; the previous one stays in use",
                registration.name,
                why,
                error,
            )
            return str(error)
        log.info("TLS certificate of %s reloaded (%s)", registration.name, why)
        return None

    def start(self) -> None:
        """Poll the files, and reload everything on SIGHUP, from the running loop."""
        loop = asyncio.get_running_loop()
        self._loop = loop
        try:
            loop.add_signal_handler(signal.SIGHUP, self.reload_all, "SIGHUP")
        except (NotImplementedError, RuntimeError, ValueError):
            # Not the main thread (a node embedded in another program): polling still works.
            log.info("SIGHUP cannot reload TLS certificates here; file changes still do")
        self._task = loop.create_task(self._poll(), name="tls-reloader")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
        if self._loop is not None:
            self._loop.remove_signal_handler(signal.SIGHUP)
            self._loop = None

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self.poll_seconds)
            self.check()


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return status.st_mtime_ns, status.st_size
