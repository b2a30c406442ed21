"""What machine and which harness produced a result: enough to compare runs honestly.

Reads /proc/cpuinfo and /proc/meminfo where they exist (Linux) and falls back to `platform`
elsewhere. The host name is only ever stored hashed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
import platform
import socket
import subprocess
from pathlib import Path
from typing import Any

_PACKAGE_DIR = Path(__file__).resolve().parents[1]  # .../harness


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        name = key.strip()
        if sep and value.strip() and name in ("model name", "Hardware", "Processor", "cpu model"):
            return value.strip()
    return platform.processor() or platform.machine() or "unknown"


def memory_bytes(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    try:
        text = meminfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("MemTotal:"):
            parts = line.split()
            if len(parts) >= 2 and parts[1].isdigit():
                unit = parts[2].lower() if len(parts) > 2 else "kb"
                return int(parts[1]) * (1024 if unit == "kb" else 1)
    return None


def hostname_hash(hostname: str | None = None) -> str:
    name = socket.gethostname() if hostname is None else hostname
    return hashlib.sha256(name.encode("utf-8")).hexdigest()[:16]


def machine_info(
    cpuinfo: Path = Path("/proc/cpuinfo"), meminfo: Path = Path("/proc/meminfo")
) -> dict[str, Any]:
    """The `machine` object of a results file."""
    return {
        "cpu_model": cpu_model(cpuinfo),
        "cores": os.cpu_count(),
        "memory_bytes": memory_bytes(meminfo),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "os": platform.platform(),
        "hostname_hash": hostname_hash(),
        "load_average": load_average(),
    }


def load_average() -> list[float] | None:
    """The 1, 5 and 15 minute load averages when the run started (a busy machine's numbers
    are not a quiet one's); None where the OS does not say."""
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except OSError:
        return None


def harness_version() -> str:
    try:
        return importlib.metadata.version("wsmode")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def harness_commit(where: Path = _PACKAGE_DIR) -> str:
    """`git rev-parse HEAD` of the checkout the harness runs from, else "unknown"."""
    try:
        proc = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            cwd=where,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    commit = proc.stdout.strip()
    if proc.returncode != 0 or len(commit) != 40:
        return "unknown"
    return commit


def harness_info() -> dict[str, str]:
    """The `harness` object of a results file."""
    return {"version": harness_version(), "commit": harness_commit()}
