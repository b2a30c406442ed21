"""AIPerf vs `wsmode load`: same mock, same load, alternating; req/s, CPU per request, TTFT error.

Needs AIPerf installed in a virtualenv you name (`--aiperf-venv`), e.g.

    python -m venv /tmp/aiperf-venv && /tmp/aiperf-venv/bin/pip install aiperf==0.13.0
    python bench/ratios/aiperf_compare.py --aiperf-venv /tmp/aiperf-venv \\
        [--requests 3000] [--repeats 3]

The target is the SSE mock (`minimal_servers.py sse --announce-early`, its own process, pinned
to `--mock-cpu`): created ... content_part.added at once, then after `--ttft-ms` every delta
of a `--tokens`-token message; it records, per request, request read → first delta written,
and that record is the truth each tool's TTFT p50 is compared with (error = tool p50 − mock
p50, over the same requests: the record is reset before each run). For each TTFT setting the
two tools run one after the other, in alternating order, `--repeats` times: HTTP/SSE streaming
to `/v1/responses`, `--in-flight` requests in flight (closed loop), `--requests` requests,
64 input tokens, `max_output_tokens` = `--tokens`; each tool with its default process layout.

CPU per request is the whole invocation's CPU (the tool's process tree, reaped:
`RUSAGE_CHILDREN`) over its requests, and the marginal figure subtracts a `--small`-request
run of the same tool (start-up, imports, tokenizer loading), i.e. the CPU each further request
costs. AIPerf needs a Hugging Face tokenizer and this machine has no network to the Hub: the
script builds a local whitespace word-level tokenizer with the venv's own `tokenizers` (passed
as `--tokenizer`); AIPerf's client-side token counts then use it (its TTFT and throughput do
not depend on it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _servers import mock_stats, sse_mock

ROOT = Path(__file__).resolve().parents[2]
_TOKENIZER = """
import sys
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
words = ["[UNK]", "tok"] + [f"w{i}" for i in range(1000)]
tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.decoder = decoders.WordPiece(prefix="##")
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(sys.argv[1])
"""


def timed(command: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Run `command` to its end; (wall s, CPU s of it and every descendant it reaped)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    if done.returncode:
        sys.exit(f"{command[0]} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return time.perf_counter() - start, cpu


def run_aiperf(args: argparse.Namespace, url: str, requests: int, work: Path) -> dict[str, Any]:
    out = work / f"aiperf-{time.monotonic_ns()}"
    command = [str(Path(args.aiperf_venv) / "bin" / "aiperf"), "profile", "--model", "bench"]
    command += ["--tokenizer", str(work / "tokenizer"), "--url", url.rsplit("/v1", 1)[0]]
    command += ["--endpoint-type", "responses", "--streaming", "--ui-type", "none"]
    command += ["--concurrency", str(args.in_flight), "--request-count", str(requests)]
    command += ["--synthetic-input-tokens-mean", "64", "--output-tokens-mean", str(args.tokens)]
    command += ["--artifact-dir", str(out)]
    _, cpu = timed(command)  # (HF_HUB_OFFLINE=1 makes AIPerf 0.13 refuse a local tokenizer path)
    data = json.loads((out / "profile_export_aiperf.json").read_text())
    return {
        "requests": int(data["request_count"]["avg"]),
        "req_s": float(data["request_throughput"]["avg"]),
        "ttft_p50_ms": float(data["time_to_first_token"]["p50"]),
        "cpu_s": cpu,
    }


def run_wsmode(args: argparse.Namespace, url: str, requests: int, work: Path) -> dict[str, Any]:
    out = work / f"wsmode-{time.monotonic_ns()}"
    command = [sys.executable, "-m", "harness.cli", "load", "--http-target", url]
    command += ["--modes", "http", "--model", "bench", "--concurrency", str(args.in_flight)]
    command += ["--requests", str(requests), "--input-tokens", "64"]
    command += ["--output-tokens", str(args.tokens), "--out", str(out), "--keep-samples", "0"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    _, cpu = timed(command, env=env)
    (path,) = out.glob("bench/*/*.json")
    bench = json.loads(path.read_text())["bench"]
    return {
        "requests": int(bench["load"]["http"]["requests_ok"]),
        "req_s": float(bench["load"]["http"]["requests_per_s"]),
        "ttft_p50_ms": float(bench["modes"]["http"]["summary"]["ttft_ms"]["p50"]),
        "cpu_s": cpu,
    }


TOOLS = {"aiperf 0.13": run_aiperf, "wsmode load": run_wsmode}


def measure(args: argparse.Namespace, url: str, work: Path) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in TOOLS}
    small: dict[str, dict[str, Any]] = {}
    for name, tool in TOOLS.items():
        small[name] = tool(args, url, args.small, work)
    for repeat in range(args.repeats):
        order = list(TOOLS) if repeat % 2 == 0 else list(reversed(TOOLS))
        for name in order:
            mock_stats(url, reset=True)
            row = TOOLS[name](args, url, args.requests, work)
            truth = mock_stats(url)
            row["ttft_error_ms"] = row["ttft_p50_ms"] - float(truth["ttft_ms_p50"])
            row["cpu_ms_per_request"] = 1000 * row["cpu_s"] / row["requests"]
            extra = row["requests"] - small[name]["requests"]
            row["marginal_cpu_ms"] = 1000 * (row["cpu_s"] - small[name]["cpu_s"]) / extra
            runs[name].append(row)
            print(f"  {name}: {row}", file=sys.stderr)
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--aiperf-venv", required=True, help="virtualenv with aiperf installed")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--small", type=int, default=100, help="requests of the start-up run")
    parser.add_argument("--in-flight", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--ttft-ms", default="0,50", help="mock TTFT settings, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--mock-cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()
    if not (Path(args.aiperf_venv) / "bin" / "aiperf").exists():
        sys.exit(f"no aiperf in {args.aiperf_venv}/bin: pip install aiperf==0.13.0 there first")
    with tempfile.TemporaryDirectory(prefix="aiperf-compare-") as tmp:
        work = Path(tmp)
        python = str(Path(args.aiperf_venv) / "bin" / "python")
        subprocess.run([python, "-c", _TOKENIZER, str(work / "tokenizer")], check=True)
        for ttft_ms in (float(x) for x in args.ttft_ms.split(",")):
            with sse_mock(args.tokens, ttft_ms, cpu=args.mock_cpu) as (url, _):
                runs = measure(args, url, work)
            report(args, ttft_ms, runs)


def report(args: argparse.Namespace, ttft_ms: float, runs: dict[str, list[dict[str, Any]]]) -> None:
    print(
        f"\nmock TTFT {ttft_ms:g} ms (item announced at once), {args.in_flight} in flight, "
        f"{args.tokens}-token responses, {args.requests} requests; medians of {args.repeats} "
        f"alternating runs; {os.cpu_count()} cores, mock pinned to core {args.mock_cpu}"
    )
    print(f"{'tool':<14}{'req/s':>9}{'CPU ms/req':>12}{'marginal':>10}{'TTFT p50':>10}{'error':>9}")
    for name, rows in runs.items():
        med = {k: statistics.median(float(r[k]) for r in rows) for k in rows[0]}
        print(
            f"{name:<14}{med['req_s']:>9.0f}{med['cpu_ms_per_request']:>12.2f}"
            f"{med['marginal_cpu_ms']:>10.2f}{med['ttft_p50_ms']:>10.2f}"
            f"{med['ttft_error_ms']:>+9.2f}"
        )


if __name__ == "__main__":
    main()
