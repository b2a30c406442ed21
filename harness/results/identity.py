"""Who was measured: an implementation's name and version, one name per server.

A results file names its target (`target.name`, `target.version`). The name comes from, in
order: `--target-name`; the target profile's `name`; the embedded server ("reference"); the
server's own word (a `Server: wsmode-reference/0.3.0` header names the reference server); else
the URL, as `host:port`. The version: `--target-version`, else what the server offers in its
handshake or HTTP response headers (`Server`, `x-...-version`), as certify records it.

Older files named a URL-derived target three ways (`127.0.0.1:8000`, the slug
`127.0.0.1-8000-v1-responses`, `localhost:8000`): `canonical_name` reads each of them as the
one `host:port` name, so the board shows one row per server.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import urlsplit

_DEFAULT_PORTS: Final = {"ws": 80, "http": 80, "wss": 443, "https": 443}
_LOOPBACK_NAMES: Final = {"localhost": "127.0.0.1", "::1": "127.0.0.1", "[::1]": "127.0.0.1"}
#: server products that name an implementation (the product token of a `Server` header)
SERVER_PRODUCTS: Final = {"wsmode-reference": "reference"}
_VERSION_HEADER: Final = re.compile(r"^(server|x-[a-z0-9-]*version):\s*(.+)$", re.I | re.M)
NAME_SOURCES: Final = ("flag", "profile", "embedded", "server", "url")


def name_from_url(url: str) -> str:
    """`host:port` of a target URL (loopback spelled 127.0.0.1, the scheme's default port
    filled in): one server, one name, whatever path or spelling reached it."""
    try:
        parts = urlsplit(url if "://" in url else f"ws://{url}")
        host = (parts.hostname or "").lower()
        port = parts.port or _DEFAULT_PORTS.get(parts.scheme.lower())
    except ValueError:
        return url or "target"
    host = _LOOPBACK_NAMES.get(host, host)
    if not host:
        return "target"
    return f"{host}:{port}" if port else host


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-") or "x"


def url_derived_names(url: str) -> set[str]:
    """Every name an older wsmode derived from `url`: host:port, its slug, the slugged URL
    without its scheme (with and without the path)."""
    rest = re.sub(r"^\w+://", "", url)
    host_port = rest.split("/", 1)[0]
    return {host_port, _slug(host_port), _slug(rest), _slug(rest.rstrip("/")), name_from_url(url)}


def canonical_name(name: str, url: str) -> str:
    """The name a board row uses: a name derived from the URL becomes `host:port`; a given
    name (profile, flag, server's word) stays as it is."""
    if url and name in url_derived_names(url):
        return name_from_url(url)
    return name


def canonical_target(result: Mapping[str, Any]) -> str:
    target = result.get("target") or {}
    return canonical_name(str(target.get("name") or "target"), str(target.get("url") or ""))


def offered_version(text: str) -> str | None:
    """The version string in response headers given as text (`Server: x`, `x-...-version: y`),
    as `header: value`; None when there is none."""
    match = _VERSION_HEADER.search(text)
    return f"{match.group(1).lower()}: {match.group(2).strip()}" if match else None


def header_identity(headers: Mapping[str, str]) -> tuple[str | None, str | None]:
    """(name, version) the server's response headers give: a known server product names the
    implementation; any version header (or Server) gives the version string."""
    lowered = {k.lower(): v for k, v in headers.items()}
    name = None
    server = lowered.get("server", "")
    product = server.split("/", 1)[0].strip().lower()
    if product in SERVER_PRODUCTS:
        name = SERVER_PRODUCTS[product]
    version = None
    for key, value in lowered.items():
        if re.fullmatch(r"x-[a-z0-9-]*version", key):
            version = f"{key}: {value.strip()}"
            break
    if version is None and server:
        version = f"server: {server.strip()}"
    return name, version


def version_number(version: str | None) -> str | None:
    """The version token of a version string (`x-litellm-version: 1.110.2` -> `1.110.2`,
    `server: wsmode-reference/0.3.0` -> `0.3.0`), for comparing two files' versions."""
    if not version:
        return None
    match = re.search(r"\d+(?:\.\d+)+(?:[-.+]?[A-Za-z0-9]+)*", version)
    return match.group(0) if match else version.strip()


def resolve_identity(
    *,
    url: str,
    name: str | None = None,
    version: str | None = None,
    profile_name: str | None = None,
    embedded: bool = False,
    headers: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The `target` object of a results file: url, name, version and where the name came from."""
    server_name, server_version = header_identity(headers or {})
    if name:
        chosen, source = name, "flag"
    elif profile_name:
        chosen, source = profile_name, "profile"
    elif embedded:
        chosen, source = "reference", "embedded"
    elif server_name:
        chosen, source = server_name, "server"
    else:
        chosen, source = name_from_url(url), "url"
    return {
        "url": url,
        "name": chosen,
        "version": version or server_version,
        "name_source": source,
    }
