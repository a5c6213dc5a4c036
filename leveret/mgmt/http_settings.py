"""What the node's configuration asks of every management answer: headers and the body cap."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .listener import HttpLimits

if TYPE_CHECKING:
    from ..config import Config


def http_limits(config: Config) -> HttpLimits:
    """RabbitMQ's management.headers.*, csp and hsts policies (an empty value sends no header),
    and management.http.max_body_size."""
    named = (
        ("x-content-type-options", config.management_headers_content_type_options),
        ("x-frame-options", config.management_headers_frame_options),
        ("x-xss-protection", config.management_headers_xss_protection),
        ("content-security-policy", config.management_csp_policy),
    )
    headers = tuple((name, value) for name, value in named if value)
    hsts = config.management_hsts_policy
    https_headers = (("strict-transport-security", hsts),) if hsts else ()
    return HttpLimits(config.management_http_max_body_size, headers, https_headers)
