"""`wsmode check`'s peak memory against the size of what it reads, side by side in one run.

Generates JSONL captures and SSE bodies of growing size (many clean responses, each ~40 events)
and runs `wsmode check` on each in its own process, reading its peak RSS from the kernel
(`ru_maxrss` of the waited child). Streamed forms are bounded by the largest record and the
open responses, so the peak should stay flat while the file grows (ratio ~1.0), where reading
whole would grow with it.

    python bench/ratios/check_memory.py                 # 16, 64, 256 MiB
    python bench/ratios/check_memory.py --mib 16 1024   # the issue's 1 GiB

Forms `board` and `gate` do the same for `wsmode board` and `wsmode gate` over a certificate
(a committed report.json of results/certify whose cases, wire logs and all, are repeated up to
the size): results files are read in pieces and a case's wire log is dropped as it is read
(harness/results/reading.py), so the peak follows the cases' count (~0.3 kB each), not the file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.protocol.emitter import ResponseEmitter
from harness.protocol.events import response_object
from harness.results.schema import certify_summary
from harness.transport.sse_wire import encode_events

USAGE = {"input_tokens": 10, "output_tokens": 30, "total_tokens": 40}

_MEASURE = """
import resource, subprocess, sys
done = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def _response(n: int) -> list[dict[str, object]]:
    emitter = ResponseEmitter(response_object(f"resp_{n}", "m", created_at=0), self_check=False)
    events = [emitter.created(), emitter.in_progress()]
    events += emitter.begin_message(f"msg_{n}")
    events += [emitter.text_delta(f"word{k} ") for k in range(30)]
    events += emitter.end_message()
    events.append(emitter.completed(USAGE, completed_at=1))
    return events


def _write(path: Path, mib: int, form: str) -> int:
    """A file of about `mib` MiB; the number of responses in it."""
    block = _response(0)
    one = (
        "".join(json.dumps(e) + "\n" for e in block).encode()
        if form == "jsonl"
        else encode_events(block)
    )
    count = max(1, mib * 1024 * 1024 // len(one))
    with path.open("wb") as f:
        for _ in range(count):
            f.write(one)  # same ids each time: each response is judged on its own
    return count


CERTIFICATES = Path(__file__).resolve().parents[2] / "results" / "certify"


def _write_certificate(path: Path, mib: int) -> int:
    """A certify results file of about `mib` MiB (a committed one's cases repeated under new
    ids, its summary recounted); the number of cases."""
    base = json.loads(min(CERTIFICATES.glob("*/*/report.json")).read_text(encoding="utf-8"))
    certify = base.pop("certify")
    cases = certify.pop("cases")
    certify.pop("summary")
    written, light = 0, []
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps(base)[:-1] + ', "certify": {"cases": [')
        while written < mib * 1024 * 1024 or len(light) < len(cases):
            case = {**cases[len(light) % len(cases)], "id": f"case-{len(light)}"}
            text = json.dumps(case)
            f.write(("," if light else "") + text)
            written += len(text)
            light.append({k: case[k] for k in ("id", "level", "verdict")})
        f.write('], "summary": ' + json.dumps(certify_summary(light)))
        f.write("".join(f", {json.dumps(k)}: {json.dumps(v)}" for k, v in certify.items()) + "}}")
    return len(light)


def _command(form: str, path: Path, out: Path) -> list[str]:
    if form == "board":
        return ["board", "--out", str(out), str(path)]
    if form == "gate":
        return ["gate", "--baseline", str(path), "--current", str(path)]
    return ["check", str(path)]


def _peak_rss_mib(path: Path, form: str) -> tuple[int, float, float]:
    command = _command(form, path, path.parent / "board")
    argv = [sys.executable, "-c", _MEASURE, sys.executable, "-m", "harness.cli", *command]
    started = time.perf_counter()
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), int(out[1]) / 1024, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument(
        "--forms", nargs="+", default=["jsonl", "sse"], choices=["jsonl", "sse", "board", "gate"]
    )
    args = parser.parse_args()
    print(
        f"{'form':<6} {'file MiB':>9} {'records':>10} {'exit':>5} {'peak RSS MiB':>13} "
        f"{'vs smallest':>12} {'s':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for form in args.forms:
            base: float | None = None
            for mib in sorted(args.mib):
                path = Path(tmp) / f"capture-{mib}.{form}"
                certificate = form in ("board", "gate")
                count = _write_certificate(path, mib) if certificate else _write(path, mib, form)
                status, peak, took = _peak_rss_mib(path, form)
                base = base or peak
                size = path.stat().st_size / 1024 / 1024
                print(
                    f"{form:<6} {size:>9.0f} {count:>10} {status:>5} {peak:>13.1f} "
                    f"{peak / base:>11.2f}x {took:>7.1f}"
                )
                path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
