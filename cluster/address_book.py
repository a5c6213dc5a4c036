"""Where each node of the cluster listens for cluster traffic; the newest word wins.

Addresses come from the replicated members table and from authenticated calls (a node that
restarts on another port says so in every call it makes), so a node is found again as soon as
it speaks, before the members table catches up.
"""

from __future__ import annotations

from collections.abc import Callable

AddressListener = Callable[[str, str | None], None]


class AddressBook:
    """Node name -> `host:port`, with listeners told of every change."""

    def __init__(self, own_name: str, own_address: str) -> None:
        self.own_name = own_name
        self.own_address = own_address
        self._addresses: dict[str, str] = {own_name: own_address}
        self._listeners: list[AddressListener] = []

    def set_own_address(self, address: str) -> None:
        """Where this node listens, once it does."""
        self.own_address = address
        self._addresses[self.own_name] = address

    def listen(self, listener: AddressListener) -> None:
        """Call `listener(name, address)` on each change (address None: forgotten)."""
        self._listeners.append(listener)

    def get(self, name: str) -> str | None:
        """Where `name` listens, if known."""
        return self._addresses.get(name)

    def names(self) -> list[str]:
        """Every node with a known address, this one included."""
        return sorted(self._addresses)

    def set(self, name: str, address: str) -> bool:
        """Record that `name` listens at `address`; True when that is news."""
        if name == self.own_name or self._addresses.get(name) == address:
            return False
        self._addresses[name] = address
        for listener in self._listeners:
            listener(name, address)
        return True

    def forget(self, name: str) -> None:
        """Drop `name` (it left the cluster)."""
        if name != self.own_name and self._addresses.pop(name, None) is not None:
            for listener in self._listeners:
                listener(name, None)
