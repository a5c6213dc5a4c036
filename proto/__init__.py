"""Node-to-node contracts: the .proto files and the Python stubs generated from them."""
