"""The exit codes of sysexits.h that `leveret server` and `leveret ctl` end with, as rabbitmqctl."""

EX_OK = 0
EX_USAGE = 64  # a command-line usage error
EX_DATAERR = 65  # the input data was refused
EX_NOUSER = 67  # no such user
EX_UNAVAILABLE = 69  # a node, port or peer is not available
EX_SOFTWARE = 70  # an internal error
EX_CANTCREAT = 73  # a file or directory (the data directory, a log file) cannot be used
EX_CONFIG = 78  # the configuration (the cluster secret included) is unusable
