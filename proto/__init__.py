"""Node-to-node contracts: the .proto files and the Python stubs generated from them, and the
metadata commands, effects and records that travel in the Raft log (metadata_schema.py)."""
