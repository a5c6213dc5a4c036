"""The cluster extension's glue: how cluster/ plugs into a node (the one place importing both)."""
