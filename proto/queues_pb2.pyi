from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class QueueRef(_message.Message):
    __slots__ = ("vhost", "name")
    VHOST_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    vhost: str
    name: str
    def __init__(self, vhost: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...
