from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Outcome(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACK: _ClassVar[Outcome]
    REJECT: _ClassVar[Outcome]
    REQUEUE: _ClassVar[Outcome]

class RequestKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STATUS: _ClassVar[RequestKind]
    GET: _ClassVar[RequestKind]
    PURGE: _ClassVar[RequestKind]
    VIEW: _ClassVar[RequestKind]
    CLIENTS: _ClassVar[RequestKind]
    CLOSE_CONNECTION: _ClassVar[RequestKind]
ACK: Outcome
REJECT: Outcome
REQUEUE: Outcome
STATUS: RequestKind
GET: RequestKind
PURGE: RequestKind
VIEW: RequestKind
CLIENTS: RequestKind
CLOSE_CONNECTION: RequestKind

class Publish(_message.Message):
    __slots__ = ("vhost", "queues", "exchange", "routing_key", "header", "body")
    VHOST_FIELD_NUMBER: _ClassVar[int]
    QUEUES_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    vhost: str
    queues: _containers.RepeatedScalarFieldContainer[str]
    exchange: str
    routing_key: str
    header: bytes
    body: bytes
    def __init__(self, vhost: _Optional[str] = ..., queues: _Optional[_Iterable[str]] = ..., exchange: _Optional[str] = ..., routing_key: _Optional[str] = ..., header: _Optional[bytes] = ..., body: _Optional[bytes] = ...) -> None: ...

class Subscribe(_message.Message):
    __slots__ = ("consumer", "vhost", "queue", "tag", "no_ack", "exclusive", "priority", "prefetch", "credit", "arguments", "channel", "frame_max")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    VHOST_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    TAG_FIELD_NUMBER: _ClassVar[int]
    NO_ACK_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    PREFETCH_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    CHANNEL_FIELD_NUMBER: _ClassVar[int]
    FRAME_MAX_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    vhost: str
    queue: str
    tag: str
    no_ack: bool
    exclusive: bool
    priority: int
    prefetch: int
    credit: int
    arguments: bytes
    channel: int
    frame_max: int
    def __init__(self, consumer: _Optional[int] = ..., vhost: _Optional[str] = ..., queue: _Optional[str] = ..., tag: _Optional[str] = ..., no_ack: _Optional[bool] = ..., exclusive: _Optional[bool] = ..., priority: _Optional[int] = ..., prefetch: _Optional[int] = ..., credit: _Optional[int] = ..., arguments: _Optional[bytes] = ..., channel: _Optional[int] = ..., frame_max: _Optional[int] = ...) -> None: ...

class Cancel(_message.Message):
    __slots__ = ("consumer",)
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    def __init__(self, consumer: _Optional[int] = ...) -> None: ...

class Credit(_message.Message):
    __slots__ = ("consumer", "credit")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    CREDIT_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    credit: int
    def __init__(self, consumer: _Optional[int] = ..., credit: _Optional[int] = ...) -> None: ...

class Settle(_message.Message):
    __slots__ = ("outcome", "deliveries")
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    outcome: Outcome
    deliveries: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, outcome: _Optional[_Union[Outcome, str]] = ..., deliveries: _Optional[_Iterable[int]] = ...) -> None: ...

class Request(_message.Message):
    __slots__ = ("id", "kind", "vhost", "queue", "no_ack", "view_query", "name", "reason")
    ID_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VHOST_FIELD_NUMBER: _ClassVar[int]
    QUEUE_FIELD_NUMBER: _ClassVar[int]
    NO_ACK_FIELD_NUMBER: _ClassVar[int]
    VIEW_QUERY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    id: int
    kind: RequestKind
    vhost: str
    queue: str
    no_ack: bool
    view_query: str
    name: str
    reason: str
    def __init__(self, id: _Optional[int] = ..., kind: _Optional[_Union[RequestKind, str]] = ..., vhost: _Optional[str] = ..., queue: _Optional[str] = ..., no_ack: _Optional[bool] = ..., view_query: _Optional[str] = ..., name: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class DirectReply(_message.Message):
    __slots__ = ("address", "exchange", "routing_key", "header", "body", "id")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    address: str
    exchange: str
    routing_key: str
    header: bytes
    body: bytes
    id: int
    def __init__(self, address: _Optional[str] = ..., exchange: _Optional[str] = ..., routing_key: _Optional[str] = ..., header: _Optional[bytes] = ..., body: _Optional[bytes] = ..., id: _Optional[int] = ...) -> None: ...

class Up(_message.Message):
    __slots__ = ("publishes", "subscribes", "cancels", "credits", "settles", "requests", "applied", "unconfirmed", "direct_replies")
    PUBLISHES_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBES_FIELD_NUMBER: _ClassVar[int]
    CANCELS_FIELD_NUMBER: _ClassVar[int]
    CREDITS_FIELD_NUMBER: _ClassVar[int]
    SETTLES_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    APPLIED_FIELD_NUMBER: _ClassVar[int]
    UNCONFIRMED_FIELD_NUMBER: _ClassVar[int]
    DIRECT_REPLIES_FIELD_NUMBER: _ClassVar[int]
    publishes: _containers.RepeatedCompositeFieldContainer[Publish]
    subscribes: _containers.RepeatedCompositeFieldContainer[Subscribe]
    cancels: _containers.RepeatedCompositeFieldContainer[Cancel]
    credits: _containers.RepeatedCompositeFieldContainer[Credit]
    settles: _containers.RepeatedCompositeFieldContainer[Settle]
    requests: _containers.RepeatedCompositeFieldContainer[Request]
    applied: int
    unconfirmed: bool
    direct_replies: _containers.RepeatedCompositeFieldContainer[DirectReply]
    def __init__(self, publishes: _Optional[_Iterable[_Union[Publish, _Mapping]]] = ..., subscribes: _Optional[_Iterable[_Union[Subscribe, _Mapping]]] = ..., cancels: _Optional[_Iterable[_Union[Cancel, _Mapping]]] = ..., credits: _Optional[_Iterable[_Union[Credit, _Mapping]]] = ..., settles: _Optional[_Iterable[_Union[Settle, _Mapping]]] = ..., requests: _Optional[_Iterable[_Union[Request, _Mapping]]] = ..., applied: _Optional[int] = ..., unconfirmed: _Optional[bool] = ..., direct_replies: _Optional[_Iterable[_Union[DirectReply, _Mapping]]] = ...) -> None: ...

class Confirm(_message.Message):
    __slots__ = ("upto", "refused", "congested")
    UPTO_FIELD_NUMBER: _ClassVar[int]
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    CONGESTED_FIELD_NUMBER: _ClassVar[int]
    upto: int
    refused: _containers.RepeatedScalarFieldContainer[int]
    congested: bool
    def __init__(self, upto: _Optional[int] = ..., refused: _Optional[_Iterable[int]] = ..., congested: _Optional[bool] = ...) -> None: ...

class Delivery(_message.Message):
    __slots__ = ("consumer", "id", "redelivered", "exchange", "routing_key", "header", "body")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_FIELD_NUMBER: _ClassVar[int]
    ROUTING_KEY_FIELD_NUMBER: _ClassVar[int]
    HEADER_FIELD_NUMBER: _ClassVar[int]
    BODY_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    id: int
    redelivered: bool
    exchange: str
    routing_key: str
    header: bytes
    body: bytes
    def __init__(self, consumer: _Optional[int] = ..., id: _Optional[int] = ..., redelivered: _Optional[bool] = ..., exchange: _Optional[str] = ..., routing_key: _Optional[str] = ..., header: _Optional[bytes] = ..., body: _Optional[bytes] = ...) -> None: ...

class FramedDeliveries(_message.Message):
    __slots__ = ("consumer", "ids", "redelivered", "exchange_and_keys", "framed")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    IDS_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    EXCHANGE_AND_KEYS_FIELD_NUMBER: _ClassVar[int]
    FRAMED_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    ids: _containers.RepeatedScalarFieldContainer[int]
    redelivered: _containers.RepeatedScalarFieldContainer[int]
    exchange_and_keys: _containers.RepeatedScalarFieldContainer[bytes]
    framed: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, consumer: _Optional[int] = ..., ids: _Optional[_Iterable[int]] = ..., redelivered: _Optional[_Iterable[int]] = ..., exchange_and_keys: _Optional[_Iterable[bytes]] = ..., framed: _Optional[_Iterable[bytes]] = ...) -> None: ...

class Subscribed(_message.Message):
    __slots__ = ("consumer", "code", "text")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    code: int
    text: str
    def __init__(self, consumer: _Optional[int] = ..., code: _Optional[int] = ..., text: _Optional[str] = ...) -> None: ...

class Cancelled(_message.Message):
    __slots__ = ("consumer",)
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    consumer: int
    def __init__(self, consumer: _Optional[int] = ...) -> None: ...

class Reply(_message.Message):
    __slots__ = ("id", "code", "text", "message_count", "consumer_count", "delivery", "has_delivery", "unacked_count", "view")
    ID_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_COUNT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_FIELD_NUMBER: _ClassVar[int]
    HAS_DELIVERY_FIELD_NUMBER: _ClassVar[int]
    UNACKED_COUNT_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    id: int
    code: int
    text: str
    message_count: int
    consumer_count: int
    delivery: Delivery
    has_delivery: bool
    unacked_count: int
    view: bytes
    def __init__(self, id: _Optional[int] = ..., code: _Optional[int] = ..., text: _Optional[str] = ..., message_count: _Optional[int] = ..., consumer_count: _Optional[int] = ..., delivery: _Optional[_Union[Delivery, _Mapping]] = ..., has_delivery: _Optional[bool] = ..., unacked_count: _Optional[int] = ..., view: _Optional[bytes] = ...) -> None: ...

class Down(_message.Message):
    __slots__ = ("confirms", "deliveries", "subscribed", "cancelled", "replies", "cancel_oks", "framed_deliveries")
    CONFIRMS_FIELD_NUMBER: _ClassVar[int]
    DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIBED_FIELD_NUMBER: _ClassVar[int]
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    REPLIES_FIELD_NUMBER: _ClassVar[int]
    CANCEL_OKS_FIELD_NUMBER: _ClassVar[int]
    FRAMED_DELIVERIES_FIELD_NUMBER: _ClassVar[int]
    confirms: _containers.RepeatedCompositeFieldContainer[Confirm]
    deliveries: _containers.RepeatedCompositeFieldContainer[Delivery]
    subscribed: _containers.RepeatedCompositeFieldContainer[Subscribed]
    cancelled: _containers.RepeatedCompositeFieldContainer[Cancelled]
    replies: _containers.RepeatedCompositeFieldContainer[Reply]
    cancel_oks: _containers.RepeatedCompositeFieldContainer[Cancelled]
    framed_deliveries: _containers.RepeatedCompositeFieldContainer[FramedDeliveries]
    def __init__(self, confirms: _Optional[_Iterable[_Union[Confirm, _Mapping]]] = ..., deliveries: _Optional[_Iterable[_Union[Delivery, _Mapping]]] = ..., subscribed: _Optional[_Iterable[_Union[Subscribed, _Mapping]]] = ..., cancelled: _Optional[_Iterable[_Union[Cancelled, _Mapping]]] = ..., replies: _Optional[_Iterable[_Union[Reply, _Mapping]]] = ..., cancel_oks: _Optional[_Iterable[_Union[Cancelled, _Mapping]]] = ..., framed_deliveries: _Optional[_Iterable[_Union[FramedDeliveries, _Mapping]]] = ...) -> None: ...

class Challenge(_message.Message):
    __slots__ = ("nonce",)
    NONCE_FIELD_NUMBER: _ClassVar[int]
    nonce: str
    def __init__(self, nonce: _Optional[str] = ...) -> None: ...

class Hello(_message.Message):
    __slots__ = ("node", "address", "auth")
    NODE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    AUTH_FIELD_NUMBER: _ClassVar[int]
    node: str
    address: str
    auth: str
    def __init__(self, node: _Optional[str] = ..., address: _Optional[str] = ..., auth: _Optional[str] = ...) -> None: ...

class Verdict(_message.Message):
    __slots__ = ("refused",)
    REFUSED_FIELD_NUMBER: _ClassVar[int]
    refused: str
    def __init__(self, refused: _Optional[str] = ...) -> None: ...

class ToHome(_message.Message):
    __slots__ = ("up", "hello")
    UP_FIELD_NUMBER: _ClassVar[int]
    HELLO_FIELD_NUMBER: _ClassVar[int]
    up: _containers.RepeatedCompositeFieldContainer[Up]
    hello: Hello
    def __init__(self, up: _Optional[_Iterable[_Union[Up, _Mapping]]] = ..., hello: _Optional[_Union[Hello, _Mapping]] = ...) -> None: ...

class FromHome(_message.Message):
    __slots__ = ("down", "challenge", "verdict")
    DOWN_FIELD_NUMBER: _ClassVar[int]
    CHALLENGE_FIELD_NUMBER: _ClassVar[int]
    VERDICT_FIELD_NUMBER: _ClassVar[int]
    down: _containers.RepeatedCompositeFieldContainer[Down]
    challenge: Challenge
    verdict: Verdict
    def __init__(self, down: _Optional[_Iterable[_Union[Down, _Mapping]]] = ..., challenge: _Optional[_Union[Challenge, _Mapping]] = ..., verdict: _Optional[_Union[Verdict, _Mapping]] = ...) -> None: ...

class LocateRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Location(_message.Message):
    __slots__ = ("port",)
    PORT_FIELD_NUMBER: _ClassVar[int]
    port: int
    def __init__(self, port: _Optional[int] = ...) -> None: ...
