"""Certificate names in RabbitMQ's format (rabbit_cert_info): RFC 4514, last RDN first."""

from __future__ import annotations

from leveret.tls_peer import distinguished_name


def test_rdns_are_reversed_with_rabbitmqs_short_names() -> None:
    subject = (
        (("countryName", "GB"),),
        (("organizationName", "Example"),),
        (("organizationalUnitName", "Ops"), ("userId", "u1")),
        (("commonName", "alice"),),
    )
    assert distinguished_name(subject) == "CN=alice,OU=Ops+UID=u1,O=Example,C=GB"


def test_values_are_escaped_as_rabbitmq_escapes_them() -> None:
    assert distinguished_name(((("commonName", "a,b+c"),),)) == "CN=a\\,b\\+c"
    assert distinguished_name(((("commonName", " #x "),),)) == "CN=\\ #x\\ "
    assert distinguished_name(((("commonName", "#x"),),)) == "CN=\\#x"
    assert distinguished_name(((("commonName", "é"),),)) == "CN=\\C3\\A9"
    assert distinguished_name(((("1.2.3.4", "v"),),)) == "1.2.3.4=v"
