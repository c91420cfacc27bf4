#!/usr/bin/env bash
# device-check: run the built collector's gpu receiver on a machine with an NVIDIA GPU, through
# NVML and, where nv-hostengine exists, DCGM; drive PCIe traffic with what the machine has; report
# per quantity the source the receiver chose, the rates it served against the traffic driven, and
# `nvidia-smi topo -m` next to the collector's topology metrics. A few minutes at most; no network.
#
# On a machine without a GPU it says so and exits 0. `make device-check` runs it; it needs only
# bash and coreutils, plus curl, wget or python3 to read the Prometheus endpoint.
#
#   ICLENS_COLLECTOR   the collector binary (default bin/otelcol-iclens; carry it to the machine)
#   DEVICE_CHECK_SECONDS  traffic per source (default 15)
#   DEVICE_CHECK_OUT   where logs and scrapes are kept (default a temporary directory)
set -u
cd "$(dirname "$0")/../.."

say() { printf 'device-check: %s\n' "$*"; }

if ! command -v nvidia-smi >/dev/null 2>&1; then
  say "no NVIDIA GPU found (no nvidia-smi on PATH): nothing to check"
  exit 0
fi
if ! gpus=$(nvidia-smi -L 2>/dev/null) || ! grep -q '^GPU ' <<<"$gpus"; then
  say "no NVIDIA GPU found (nvidia-smi lists none): nothing to check"
  exit 0
fi

COLLECTOR=${ICLENS_COLLECTOR:-bin/otelcol-iclens}
SECONDS_PER_SOURCE=${DEVICE_CHECK_SECONDS:-15}
OUT=${DEVICE_CHECK_OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if [ ! -x "$COLLECTOR" ]; then
  say "collector $COLLECTOR not found: build it (make build) and carry bin/otelcol-iclens here"
  exit 1
fi

say "GPUs:"
printf '%s\n' "$gpus"
nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
command -v dcgmi >/dev/null 2>&1 && dcgmi --version 2>/dev/null | head -3

scrape() {
  local url="http://$1/metrics"
  if command -v curl >/dev/null 2>&1; then curl -fsS "$url"
  elif command -v wget >/dev/null 2>&1; then wget -qO- "$url"
  else python3 -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$url"
  fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000))
}

# --- traffic: the first generator this machine has ---------------------------------------------
# load_start SECONDS: runs in the background, writes "h2d_bytes d2h_bytes seconds" to $OUT/load.txt
# where it can count them.
LOAD_KIND=none
prepare_load() {
  if command -v nvcc >/dev/null 2>&1; then
    cat >"$OUT/pcie_load.cu" <<'EOF'
// Copies a pinned 256 MiB buffer host->device and device->host for argv[1] seconds and prints
// the bytes moved each way and the time taken.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>
int main(int argc, char **argv) {
  double secs = argc > 1 ? atof(argv[1]) : 10;
  size_t n = 256u << 20;
  void *h, *d;
  if (cudaMallocHost(&h, n) != cudaSuccess || cudaMalloc(&d, n) != cudaSuccess) { fprintf(stderr, "alloc failed\n"); return 1; }
  unsigned long long up = 0, down = 0;
  auto t0 = std::chrono::steady_clock::now();
  double el = 0;
  while (el < secs) {
    cudaMemcpy(d, h, n, cudaMemcpyHostToDevice); up += n;
    cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost); down += n;
    el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  printf("%llu %llu %.3f\n", up, down, el);
  return 0;
}
EOF
    if nvcc -O2 -o "$OUT/pcie_load" "$OUT/pcie_load.cu" >"$OUT/nvcc.log" 2>&1; then LOAD_KIND=nvcc; return; fi
    say "nvcc failed (see $OUT/nvcc.log)"
  fi
  for b in /usr/local/cuda/extras/demo_suite/bandwidthTest /usr/local/cuda/samples/bin/x86_64/linux/release/bandwidthTest; do
    if [ -x "$b" ]; then LOAD_KIND=bandwidthTest; BANDWIDTH_TEST=$b; return; fi
  done
  if python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then LOAD_KIND=torch; return; fi
}

load_start() {
  local secs=$1
  rm -f "$OUT/load.txt"
  case $LOAD_KIND in
    nvcc) ( CUDA_VISIBLE_DEVICES=0 "$OUT/pcie_load" "$secs" >"$OUT/load.txt" 2>"$OUT/load.err" ) & ;;
    torch) ( CUDA_VISIBLE_DEVICES=0 python3 - "$secs" >"$OUT/load.txt" 2>"$OUT/load.err" <<'EOF'
import sys, time, torch
secs = float(sys.argv[1]); n = 256 << 20
h = torch.empty(n, dtype=torch.uint8).pin_memory(); d = torch.empty(n, dtype=torch.uint8, device="cuda")
up = down = 0; t0 = time.monotonic()
while time.monotonic() - t0 < secs:
    d.copy_(h); torch.cuda.synchronize(); up += n
    h.copy_(d); torch.cuda.synchronize(); down += n
print(up, down, "%.3f" % (time.monotonic() - t0))
EOF
    ) & ;;
    bandwidthTest) ( end=$((SECONDS + secs)); while [ $SECONDS -lt $end ]; do "$BANDWIDTH_TEST" --device=0 --memory=pinned >/dev/null 2>&1; done; echo "? ? $secs" >"$OUT/load.txt" ) & ;;
    none) ( sleep "$secs"; echo "0 0 $secs" >"$OUT/load.txt" ) & ;;
  esac
  LOAD_PID=$!
}

# --- one run of the collector with one source -----------------------------------------------------
run_source() {
  local name=$1 gpu_cfg=$2
  local port; port=$(free_port)
  local addr="127.0.0.1:$port"
  cat >"$OUT/$name.yaml" <<EOF
receivers:
  gpu:
    collection_interval: 1s
    retry_interval: 10s
$gpu_cfg
  rnic:
    collection_interval: 5s
    root_path: /
exporters:
  prometheus:
    endpoint: $addr
    without_scope_info: true
service:
  pipelines:
    metrics: {receivers: [gpu, rnic], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
EOF
  "$COLLECTOR" --config "$OUT/$name.yaml" >"$OUT/$name.log" 2>&1 &
  local pid=$!
  sleep 6 # connect, discover, two GPM samples
  scrape "$addr" >"$OUT/$name.before" 2>/dev/null
  local t0; t0=$(date +%s.%N)
  load_start "$SECONDS_PER_SOURCE"
  wait "$LOAD_PID"
  sleep 2 # the last samples reach the served totals
  scrape "$addr" >"$OUT/$name.after" 2>/dev/null
  local t1; t1=$(date +%s.%N)
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null

  say "== source: $name =="
  grep -h "Reading GPU metrics\|No GPU metrics\|DCGM is not available" "$OUT/$name.log" | sed 's/^/  log: /' | head -5
  say "source per quantity (the receiver's own log line):"
  if grep -q "source per quantity" "$OUT/$name.log"; then
    grep -h "source per quantity" "$OUT/$name.log" | sed 's/^.*"device"/  "device"/; s/, "gpu.uuid": "[^"]*"//; s/}$//'
  else
    say "  (no such line: no GPU read)"
  fi
  read -r up down lsecs <"$OUT/load.txt" 2>/dev/null || { up=?; down=?; lsecs=$SECONDS_PER_SOURCE; }
  say "traffic driven on GPU 0 ($LOAD_KIND): host->device $up B, device->host $down B in $lsecs s"
  awk -v t0="$t0" -v t1="$t1" -v up="$up" -v down="$down" -v ls="$lsecs" '
    function key(line) { sub(/ [^ ]+$/, "", line); return line }
    FNR == NR && /^interconnect_io_bytes_total\{component="gpu_/ { before[key($0)] = $NF; next }
    /^interconnect_io_bytes_total\{component="gpu_/ {
      k = key($0); rate = ($NF - before[k]) / (t1 - t0)
      drv = "-"
      if (k ~ /device="gpu0"/ && k ~ /component="gpu_pcie"/ && up != "?" && ls > 0) {
        # GPU transmit is device->host (DCGM_FI_PROF_PCIE_TX_BYTES "from the perspective of the GPU").
        drv = (k ~ /direction="transmit"/) ? down / ls : up / ls
        drv = sprintf("%.3g", drv)
      }
      printf "  %-90s served %10.3g B/s   driven %s B/s\n", k, rate, drv
    }' "$OUT/$name.before" "$OUT/$name.after"
  grep -q '^interconnect_io_bytes_total{component="gpu_' "$OUT/$name.after" 2>/dev/null || say "  no GPU interconnect series served (see $OUT/$name.log)"
}

prepare_load
say "traffic generator: $LOAD_KIND"

run_source nvml "    source: nvml"

HE_PID=
if pgrep -x nv-hostengine >/dev/null 2>&1; then
  run_source dcgm "    source: dcgm
    dcgm: {mode: standalone, endpoint: localhost:5555, sample_interval: 1s}"
elif command -v nv-hostengine >/dev/null 2>&1; then
  nv-hostengine -n -b 127.0.0.1 -p 5555 >"$OUT/nv-hostengine.log" 2>&1 &
  HE_PID=$!
  sleep 3
  run_source dcgm "    source: dcgm
    dcgm: {mode: standalone, endpoint: 127.0.0.1:5555, sample_interval: 1s}"
  kill "$HE_PID" 2>/dev/null; wait "$HE_PID" 2>/dev/null
else
  say "no nv-hostengine on this machine: DCGM not checked"
fi

say "== topology =="
say "nvidia-smi topo -m:"
nvidia-smi topo -m 2>&1 | sed 's/^/  /'
say "the collector's view (gpu_info, rnic_topology_*):"
cat "$OUT"/*.after 2>/dev/null | grep '^gpu_info\|^rnic_topology_gpu_distance\|^rnic_topology_gpu_nearest\|^rnic_topology_link' | sort -u | sed 's/^/  /' | head -60
say "files kept in $OUT"
