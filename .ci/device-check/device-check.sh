#!/usr/bin/env bash
# device-check: the checks that only real hardware can settle, in two groups, each run where its
# hardware is and SKIPped with the reason where it is not:
#   - GPU (where nvidia-smi lists a GPU): run the built collector's gpu and rnic receivers through
#     NVML and, where nv-hostengine exists, DCGM; drive PCIe traffic on GPU 0; compare what the
#     collector served with what was driven, with what nvidia-smi says, and (DCGM's link-health
#     fields) with what dcgmi dmon reads; and run the gpu receiver alone at bursts.period 0, 10ms
#     and 100ms (gpu_burst_cost), saying what its fast sampler of NVML's PCIe byte counters costs
#     and checking GPU 0's peaks under the traffic against the average and the link's maximum;
#   - host (where sysfs under DEVICE_CHECK_ROOT has /sys/class/infiniband, a Grace SCF PMU, a Xeon
#     Max HBM PMU or an amdgpu gpu_metrics table): run the rnic (and, where its PMUs are, the
#     cpuuncore) receiver once, scrape it before and after a short window, and compare it with
#     ethtool, lspci, rdma and perf; run the cpuuncore receiver again across memory loads of known
#     bytes (mem_load.c) and the RDMA loads you name, and the gpu receiver (source amdgpu) across
#     host<->GPU and GPU->GPU copies of known bytes, and compare what it served with what was moved.
#     A check that needs a load this script cannot generate (traffic to an RDMA peer) SKIPs naming
#     the variable to set.
# Each check prints PASS, FAIL or SKIP (with the reason) and its evidence; the script exits 1 when
# any check fails, 0 otherwise. A few minutes at most; no network.
#
# On a machine with neither it says so and exits 0. `make device-check` runs it; it needs bash,
# coreutils and awk, plus curl, wget or python3 to read the Prometheus endpoint.
#
#   ICLENS_COLLECTOR        the collector binary (default bin/otelcol-iclens; carry it to the machine)
#   DEVICE_CHECK_SECONDS    traffic per source, per copy of the AMD run, and each window of
#                           gpu_burst_cost's three runs (default 15)
#   DEVICE_CHECK_SOURCES    the gpu receiver sources to run (default "nvml dcgm"); the DCGM run also
#                           reads the link-health fields (gpu_link_health), with dcgmi dmon beside it;
#                           gpu_burst_cost runs where nvml is among them
#   DEVICE_CHECK_LOAD       a traffic command of your own: run with the seconds as its argument on
#                           GPU 0 (CUDA_VISIBLE_DEVICES=0, CUDA_DEVICE_ORDER=PCI_BUS_ID), it prints
#                           "h2d_bytes d2h_bytes seconds" (default: pcie_load.cu through nvcc, then
#                           CUDA's bandwidthTest, then torch with pcie_load.py)
#   DEVICE_CHECK_SETTLE     seconds between the end of the traffic and the last scrape (default 2;
#                           gpu_burst_cost's 10ms run too)
#   DEVICE_CHECK_ROOT       root_path of the receivers (default /); the host group looks for its
#                           hardware under it (ethtool, lspci and rdma still ask the running kernel)
#   DEVICE_CHECK_HOST_SECONDS  the host group's window between its two scrapes (default 5)
#   DEVICE_CHECK_PERF_SECONDS  that window where perf stat counts Grace or Xeon Max PMU events in it
#                           (default 20)
#   DEVICE_CHECK_HOST_LOAD  a command run for the host window instead of a sleep, with the seconds as
#                           its argument (ib_write_bw to a peer, an NCCL job): the EFA check compares
#                           growth only where the window carried traffic; on Grace it is run again
#                           in the load run, where cpuuncore_grace_root_port looks for the NIC that
#                           carried it among the root ports; on bnxt_re rnic_bnxt_roce_only_bytes
#                           compares the RoCE byte counters with what the collector served
#   DEVICE_CHECK_BURST_SECONDS  how long rnic_burst_read_cost polls a port's data counter for its
#                           update granularity (default 2; DEVICE_CHECK_HOST_LOAD runs meanwhile)
#   DEVICE_CHECK_MEM_SECONDS   each window of the load run (Grace, Xeon Max): idle, memory read,
#                           memory write, and DEVICE_CHECK_HOST_LOAD and DEVICE_CHECK_GDR_LOAD where
#                           set (default 15)
#   DEVICE_CHECK_MEM_LOAD   a memory load of your own for the load run: run with "read|write SECONDS
#                           NODE" (NODE: the NUMA node its memory must be on), it prints
#                           "read_bytes write_bytes seconds" (default: mem_load.c through cc, pinned
#                           with numactl where numactl exists)
#   DEVICE_CHECK_HBM_NODE   the Xeon Max HBM's NUMA node for the memory load (default: the first
#                           node without CPUs that has memory, flat mode's HBM; set 0 in HBM-only mode)
#   DEVICE_CHECK_GDR_LOAD   a GPUDirect RDMA load to a peer, run with the seconds as its argument in
#                           the load run on Grace (ib_write_bw --use_cuda=0 -d mlx5_0 -D "$1" <peer>):
#                           cpuuncore_grace_gpudirect compares host memory with root-port bytes in it
#   DEVICE_CHECK_AMD_LOAD   the AMD copies of your own: run with "host SECONDS" it copies on GPU 0 and
#                           prints "h2d_bytes d2h_bytes seconds", with "p2p SECONDS" it copies GPU 0 ->
#                           GPU 1 and prints "bytes seconds" (default: torch built for ROCm with
#                           pcie_load.py, HIP_VISIBLE_DEVICES selecting the GPUs)
#   DEVICE_CHECK_UNCORE_REPLAY  for the script's own test: the host and load runs' cpuuncore receiver
#                           replays this recording (internal/recording) instead of reading the PMUs
#   DEVICE_CHECK_OUT        where logs and scrapes are kept (default a temporary directory)
#
# Adding a check is one `check` line in the list at the end and, where no existing function fits,
# one function that prints its evidence with `detail` and returns 0 (pass), 1 (fail) or 2 (skip,
# after `detail`-ing why).
set -u
cd "$(dirname "$0")/../.."
HERE=.ci/device-check

say() { printf 'device-check: %s\n' "$*"; }
detail() { printf '  %s\n' "$*"; }

COLLECTOR=${ICLENS_COLLECTOR:-bin/otelcol-iclens}
SECONDS_PER_SOURCE=${DEVICE_CHECK_SECONDS:-15}
SOURCES=${DEVICE_CHECK_SOURCES:-nvml dcgm}
SETTLE=${DEVICE_CHECK_SETTLE:-2}
ROOT=${DEVICE_CHECK_ROOT:-/}
HOST_SECONDS=${DEVICE_CHECK_HOST_SECONDS:-5}
# How long a freshly started collector may take to serve its first GPU series: connecting to the
# library or host engine, discovery, and the two GPM samples a rate needs (DCGM 4.x
# DcgmGpmManager.cpp). Generous: a busy machine is slow, not wrong.
READY_SECONDS=60

# --- what this machine has ------------------------------------------------------------------------
# The GPU group runs where nvidia-smi lists a GPU; the host group (rnic and cpuuncore receivers)
# where sysfs under DEVICE_CHECK_ROOT has an RDMA device, a Grace SCF PMU, a Xeon Max HBM PMU or an
# amdgpu gpu_metrics table. Each group absent is said once, and its checks SKIP with the reason.
GPU_SKIP=
if ! command -v nvidia-smi >/dev/null 2>&1; then
  GPU_SKIP="no NVIDIA GPU found (no nvidia-smi on PATH)"
elif ! gpus=$(nvidia-smi -L 2>/dev/null) || ! grep -q '^GPU ' <<<"$gpus"; then
  GPU_SKIP="no NVIDIA GPU found (nvidia-smi lists none)"
fi
sysroot=${ROOT%/}/sys
present() { compgen -G "$1" >/dev/null 2>&1; }
RDMA_SKIP= SCF_SKIP= HBM_SKIP= AMD_SKIP=
present "$sysroot/class/infiniband/*" || RDMA_SKIP="no RDMA device ($sysroot/class/infiniband is empty or absent)"
present "$sysroot/bus/event_source/devices/nvidia_scf_pmu_*" || SCF_SKIP="no Grace SCF PMU ($sysroot/bus/event_source/devices/nvidia_scf_pmu_*)"
present "$sysroot/bus/event_source/devices/uncore_hbm_*" || HBM_SKIP="no Xeon Max HBM PMU ($sysroot/bus/event_source/devices/uncore_hbm_*)"
present "$sysroot/class/drm/card*/device/gpu_metrics" || AMD_SKIP="no AMD gpu_metrics table ($sysroot/class/drm/card*/device/gpu_metrics)"
# The uncore fast sampler's check reads the running kernel's PMUs (perf_event_open), so only with
# root_path /.
UNCORE_SKIP=
if [ "${ROOT%/}" != "" ]; then UNCORE_SKIP="root_path $ROOT is not /: perf_event_open reads the running kernel's PMUs"
elif ! present "/sys/bus/event_source/devices/uncore_imc_*" && ! present "/sys/bus/event_source/devices/amd_umc_*" &&
  ! present "/sys/bus/event_source/devices/nvidia_scf_pmu_*"; then
  UNCORE_SKIP="no uncore memory PMU (uncore_imc_*, amd_umc_*, nvidia_scf_pmu_*)"
fi
HOST_SKIP=
if [ -n "$RDMA_SKIP" ] && [ -n "$SCF_SKIP" ] && [ -n "$HBM_SKIP" ] && [ -n "$AMD_SKIP" ]; then
  HOST_SKIP="no RDMA device, Grace SCF PMU, Xeon Max HBM PMU or AMD gpu_metrics under $sysroot"
fi
if [ -n "$GPU_SKIP" ] && [ -n "$HOST_SKIP" ] && [ -n "$UNCORE_SKIP" ]; then
  say "$GPU_SKIP: GPU checks skipped"
  say "$HOST_SKIP: host checks skipped"
  say "$UNCORE_SKIP: uncore checks skipped"
  say "nothing to check on this machine"
  exit 0
fi

OUT=${DEVICE_CHECK_OUT:-$(mktemp -d)}
mkdir -p "$OUT"
if [ ! -x "$COLLECTOR" ]; then
  say "collector $COLLECTOR not found: build it (make build) and carry bin/otelcol-iclens here"
  exit 1
fi
# CUDA's device 0 is nvidia-smi's GPU 0 only in PCI bus order (CUDA's default is fastest first).
export CUDA_DEVICE_ORDER=PCI_BUS_ID

if [ -z "$GPU_SKIP" ]; then
  say "GPUs:"
  printf '%s\n' "$gpus"
  nvidia-smi --query-gpu=index,name,pci.bus_id,driver_version,pcie.link.gen.current,pcie.link.width.current,pcie.link.gen.max,pcie.link.width.max --format=csv 2>&1
  command -v dcgmi >/dev/null 2>&1 && dcgmi --version 2>/dev/null | head -3
  # GPU index -> PCI address, as the collector names it (pci.NormaliseAddress: a 4-digit domain,
  # lower case): nvidia-smi prints 00000000:1B:00.0.
  nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null |
    awk -F', *' '{ a = tolower($2); sub(/^0000/, "", a); print $1, a }' >"$OUT/gpus.txt"
  nvidia-smi topo -m 2>/dev/null | sed 's/\x1b\[[0-9;]*m//g' >"$OUT/topo.txt"
else
  say "$GPU_SKIP: GPU checks skipped"
fi
[ -n "$HOST_SKIP" ] && say "$HOST_SKIP: host checks skipped"

scrape() {
  local url="http://$1/metrics"
  if command -v curl >/dev/null 2>&1; then curl -fsS "$url"
  elif command -v wget >/dev/null 2>&1; then wget -qO- "$url"
  else python3 -c 'import sys,urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1]).read().decode())' "$url"
  fi
}

# start_collector NAME CONFIG ADDR READY FIRST: runs the collector with CONFIG in the background
# (its log in $OUT/NAME.log, its PID in COLLECTOR_PID) and waits up to READY_SECONDS for a scrape
# of ADDR, kept in FIRST, to hold a line matching READY. Returns 1, the collector stopped, where
# none comes or the collector exits first.
start_collector() {
  local name=$1 config=$2 addr=$3 ready=$4 first=$5 waited=0
  "$COLLECTOR" --config "$config" >"$OUT/$name.log" 2>&1 &
  COLLECTOR_PID=$!
  until scrape "$addr" >"$first" 2>/dev/null && grep -q "$ready" "$first"; do
    if [ $waited -ge $READY_SECONDS ] || ! kill -0 "$COLLECTOR_PID" 2>/dev/null; then
      kill -INT "$COLLECTOR_PID" 2>/dev/null; wait "$COLLECTOR_PID" 2>/dev/null
      return 1
    fi
    sleep 1; waited=$((waited + 1))
  done
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 20000))
}

# samples FILE METRIC LABEL=VALUE...: the values of the samples of METRIC carrying every label,
# one a line, in the file's order.
samples() {
  local file=$1 metric=$2; shift 2
  awk -v m="$metric" -v want="$*" '
    BEGIN { n = split(want, w, " ") }
    index($0, m "{") == 1 {
      for (i = 1; i <= n; i++) { split(w[i], kv, "="); if (index($0, kv[1] "=\"" kv[2] "\"") == 0) next }
      print $NF
    }' "$file" 2>/dev/null
}

# value FILE METRIC LABEL=VALUE...: the value of the first sample of METRIC carrying every label.
value() { samples "$@" | head -n 1; }

# sum_of FILE METRIC LABEL=VALUE...: the sum over those samples (empty when there is none).
sum_of() { samples "$@" | awk '{ s += $1 } END { if (NR) printf "%.17g\n", s }'; }

# label LINE NAME: the value of label NAME in one exposition line.
label() { sed -n "s/.*[{,]$2=\"\\([^\"]*\\)\".*/\\1/p" <<<"$1"; }

# --- traffic: DEVICE_CHECK_LOAD or the first generator this machine has ---------------------------
LOAD_KIND=none
prepare_load() {
  if [ -n "${DEVICE_CHECK_LOAD:-}" ]; then LOAD_KIND=custom; return; fi
  if command -v nvcc >/dev/null 2>&1; then
    if nvcc -O2 -o "$OUT/pcie_load" "$HERE/pcie_load.cu" >"$OUT/nvcc.log" 2>&1; then LOAD_KIND=nvcc; return; fi
    say "nvcc failed (see $OUT/nvcc.log)"
  fi
  for b in /usr/local/cuda/extras/demo_suite/bandwidthTest /usr/local/cuda/samples/bin/x86_64/linux/release/bandwidthTest; do
    if [ -x "$b" ]; then LOAD_KIND=bandwidthTest; BANDWIDTH_TEST=$b; return; fi
  done
  if python3 -c 'import torch; assert torch.cuda.is_available()' >/dev/null 2>&1; then LOAD_KIND=torch; return; fi
}

# load SECONDS FILE: drives traffic on GPU 0 and writes "h2d_bytes d2h_bytes seconds" to FILE
# ("?" where the generator cannot say what it moved).
load() {
  local secs=$1 file=$2
  case $LOAD_KIND in
    custom) CUDA_VISIBLE_DEVICES=0 bash -c "$DEVICE_CHECK_LOAD \"\$1\"" load "$secs" >"$file" 2>"$file.err" ;;
    nvcc) CUDA_VISIBLE_DEVICES=0 "$OUT/pcie_load" "$secs" >"$file" 2>"$file.err" ;;
    torch) CUDA_VISIBLE_DEVICES=0 python3 "$HERE/pcie_load.py" "$secs" >"$file" 2>"$file.err" ;;
    bandwidthTest) local end=$((SECONDS + secs))
      while [ $SECONDS -lt $end ]; do "$BANDWIDTH_TEST" --device=0 --memory=pinned >/dev/null 2>&1; done
      echo "? ? $secs" >"$file" ;;
    none) sleep "$secs"; echo "? ? $secs" >"$file" ;;
  esac
}

# --- DCGM's link-health fields, as dcgmi dmon reads them ------------------------------------------
# The fields the gpu receiver reads for gpu.nvlink.errors, gpu.nvlink.bit_error_rate and
# gpu.c2c.errors (receiver/gpureceiver dcgm_fields.go dcgmNVLinkErrorFields, dcgmNVLinkBERFields,
# dcgmC2CErrorFields; health.go names the kinds), as "FIELD METRIC LABEL KIND" lines.
HEALTH_FIELDS="1204 gpu_nvlink_errors_total nvlink_error rx_malformed
1205 gpu_nvlink_errors_total nvlink_error rx_buffer_overrun
1206 gpu_nvlink_errors_total nvlink_error rx_error
1207 gpu_nvlink_errors_total nvlink_error rx_remote
1208 gpu_nvlink_errors_total nvlink_error rx_general
1209 gpu_nvlink_errors_total nvlink_error local_integrity
1210 gpu_nvlink_errors_total nvlink_error tx_discard
1213 gpu_nvlink_errors_total nvlink_error recovery
1212 gpu_nvlink_errors_total nvlink_error recovery_failed
1214 gpu_nvlink_errors_total nvlink_error symbol
1219 gpu_nvlink_errors_total nvlink_error effective
1216 gpu_nvlink_bit_error_rate_ratio nvlink_ber symbol
1218 gpu_nvlink_bit_error_rate_ratio nvlink_ber effective
1400 gpu_c2c_errors_total c2c_error crc
1401 gpu_c2c_errors_total c2c_error replay
1402 gpu_c2c_errors_total c2c_error replay_back_to_back"
HEALTH_IDS=$(awk '{ printf "%s%s", (NR > 1 ? "," : ""), $1 }' <<<"$HEALTH_FIELDS")
HEALTH_METRICS="      gpu.nvlink.errors: {enabled: true}
      gpu.nvlink.bit_error_rate: {enabled: true}
      gpu.c2c.errors: {enabled: true}"
# dmon FILE: one dcgmi dmon table of the link-health fields of every GPU (dcgmi/DeviceMonitor.cpp:
# a "#Entity" header, a unit line, then "GPU <id>" and one column per field in the order of -e;
# N/A for a blank or unsupported value; doubles with 3 decimals).
dmon() { timeout 30 dcgmi dmon -e "$HEALTH_IDS" -c 1 >"$1" 2>"$1.err"; }

# --- one run of the collector with one source -------------------------------------------------
# run_source NAME GPU_CONFIG [METRICS]: $OUT/NAME.{yaml,log,before,after,load}, or $OUT/NAME.skip
# saying why the source was not run, or $OUT/NAME.failed saying what went wrong. METRICS are more
# lines for the receiver's metrics: block. Where they enable the link-health metrics and dcgmi is
# on PATH, dcgmi dmon reads the fields four times, so that what the collector served lies between
# its reads (check_link_health): NAME.dmon0 before the collector starts, dmon1 after the first
# scrape, dmon2 five seconds before the traffic ends (the collector's last reading, one collection
# and one DCGM sample before the last scrape, comes after it where DEVICE_CHECK_SECONDS is 5 or
# more), dmon3 after the last scrape.
run_source() {
  local name=$1 gpu_cfg=$2 metrics=${3:-} dmons= dmon_pid=
  local addr="127.0.0.1:$(free_port)"
  [ -n "$metrics" ] && [ "$metrics" = "$HEALTH_METRICS" ] && command -v dcgmi >/dev/null 2>&1 && dmons=1
  [ -n "$dmons" ] && dmon "$OUT/$name.dmon0"
  cat >"$OUT/$name.yaml" <<EOF
receivers:
  gpu:
    collection_interval: 1s
    retry_interval: 10s
    root_path: $ROOT
$gpu_cfg
    metrics:
      gpu.nvlink.link.io: {enabled: true}
$metrics
  rnic:
    collection_interval: 5s
    root_path: $ROOT
    topology: {all_pairs: true}
exporters:
  prometheus:
    endpoint: $addr
    without_scope_info: true
service:
  pipelines:
    metrics: {receivers: [gpu, rnic], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
EOF
  if ! start_collector "$name" "$OUT/$name.yaml" "$addr" '^interconnect_io_bytes_total{component="gpu_' "$OUT/$name.before"; then
    echo "no GPU interconnect series served within ${READY_SECONDS}s (see $OUT/$name.log)" >"$OUT/$name.failed"
    return
  fi
  local pid=$COLLECTOR_PID
  # One more collection, so that the first scrape holds a settled total and not a first sample.
  sleep 2
  scrape "$addr" >"$OUT/$name.before" 2>/dev/null
  if [ -n "$dmons" ]; then
    dmon "$OUT/$name.dmon1"
    { sleep $((SECONDS_PER_SOURCE > 5 ? SECONDS_PER_SOURCE - 5 : 0)); dmon "$OUT/$name.dmon2"; } &
    dmon_pid=$!
  fi
  load "$SECONDS_PER_SOURCE" "$OUT/$name.load"
  sleep "$SETTLE" # the last samples of the traffic reach the served totals
  scrape "$addr" >"$OUT/$name.after" 2>/dev/null
  if [ -n "$dmons" ]; then wait "$dmon_pid"; dmon "$OUT/$name.dmon3"; fi
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  say "source $name: what the gpu receiver read, per quantity (its own log line):"
  grep -h "source per quantity" "$OUT/$name.log" | sed 's/^.*"device"/  "device"/; s/, "gpu.uuid": "[^"]*"//; s/}$//'
}

# --- checks -------------------------------------------------------------------------------------
FAILED=0
# check NAME FUNCTION ARGS...: runs one named check and says its outcome.
check() {
  local name=$1; shift
  local body rc
  body=$("$@" 2>&1); rc=$?
  case $rc in
    0) say "PASS $name" ;;
    2) say "SKIP $name" ;;
    *) say "FAIL $name"; FAILED=1 ;;
  esac
  [ -n "$body" ] && printf '%s\n' "$body"
}

# ran SOURCE: whether the source's run produced scrapes (returns 2 with the reason when skipped,
# 1 when it failed).
ran() {
  if [ -f "$OUT/$1.skip" ]; then detail "$(cat "$OUT/$1.skip")"; return 2; fi
  if [ -f "$OUT/$1.failed" ]; then detail "$(cat "$OUT/$1.failed")"; return 1; fi
  return 0
}

# The traffic tolerance. The served bytes of GPU 0 over the window (one scrape before the traffic,
# one SETTLE seconds after it) are compared with the bytes the generator moved each way:
#   - at most 30 % above: DCGM_FI_PROF_PCIE_TX/RX_BYTES count PCIe "header and payload"
#     (dcgm_fields.h), and a 256-byte TLP carries about 24 bytes of header and framing, plus the
#     driver's own traffic; NVML's nvmlDeviceGetPcieThroughput (nvml.h) samples 20 ms windows in KB/s;
#   - at most 10 % below;
#   - and, either way, two samples (2 s at the 1 s collection and sample intervals) of the driven
#     rate: the served totals lag the device by up to one sample at each end of the window.
TOL_LOW=0.9 TOL_HIGH=1.3 TOL_SAMPLES_S=2

# check_copy_bytes COMPONENT SOURCE: GPU 0's served COMPONENT bytes (gpu_pcie, or gpu_c2c on a
# Grace GPU, whose host copies cross NVLink-C2C instead of PCIe), transmit against device->host
# and receive against host->device (DCGM_FI_PROF_PCIE_TX_BYTES is "from the perspective of the
# GPU", and so are the C2C fields 1076-1079). gpu_pcie is skipped on a GPU that has gpu_c2c
# series, gpu_c2c on one that has none.
check_copy_bytes() {
  local comp=$1 src=$2
  ran "$src" || return
  local up down secs bus c2c rc=0
  bus=$(awk '$1 == 0 { print $2 }' "$OUT/gpus.txt")
  c2c=$(value "$OUT/$src.after" interconnect_io_bytes_total component=gpu_c2c pci_bus_id="$bus")
  if [ "$comp" = gpu_c2c ] && [ -z "$c2c" ]; then detail "GPU 0 ($bus) serves no gpu_c2c series: not a Grace GPU"; return 2; fi
  if [ "$comp" = gpu_pcie ] && [ -n "$c2c" ]; then detail "GPU 0 ($bus) has a C2C link: its host copies cross it, see gpu_c2c_bytes_$src"; return 2; fi
  read -r up down secs <"$OUT/$src.load" 2>/dev/null || { detail "the traffic generator wrote nothing (see $OUT/$src.load.err)"; return 1; }
  if [ "$up" = "?" ]; then detail "the traffic generator ($LOAD_KIND) does not say what it moved"; return 2; fi
  detail "traffic driven on GPU 0 ($bus, $LOAD_KIND): host->device $up B, device->host $down B in $secs s"
  local dir driven b a
  for dir in transmit receive; do
    driven=$up; [ $dir = transmit ] && driven=$down
    b=$(value "$OUT/$src.before" interconnect_io_bytes_total component=$comp direction=$dir pci_bus_id="$bus")
    a=$(value "$OUT/$src.after" interconnect_io_bytes_total component=$comp direction=$dir pci_bus_id="$bus")
    if [ -z "$b" ] || [ -z "$a" ]; then detail "$comp $dir of $bus: not served"; rc=1; continue; fi
    awk -v b="$b" -v a="$a" -v d="$driven" -v s="$secs" -v lo=$TOL_LOW -v hi=$TOL_HIGH -v k=$TOL_SAMPLES_S -v dir=$dir -v comp=$comp '
      BEGIN {
        served = a - b; slack = k * d / s; min = lo * d - slack; max = hi * d + slack
        ok = served >= min && served <= max
        printf "  %s %s: served %.4g B, driven %.4g B (%.3g of it), allowed %.4g..%.4g B: %s\n",
          comp, dir, served, d, (d > 0 ? served / d : 0), min, max, (ok ? "ok" : "MISMATCH")
        exit !ok
      }' || rc=1
  done
  return $rc
}

# check_bus_ids SOURCE: the GPUs the collector names (gpu_info pci_bus_id) are nvidia-smi's.
check_bus_ids() {
  local src=$1
  ran "$src" || return
  local want got
  want=$(awk '{ print $2 }' "$OUT/gpus.txt" | sort -u | tr '\n' ' ')
  got=$(grep '^gpu_info{' "$OUT/$src.after" | sed -n 's/.*[{,]pci_bus_id="\([^"]*\)".*/\1/p' | sort -u | tr '\n' ' ')
  detail "nvidia-smi: $want"
  detail "collector:  $got"
  [ "$want" = "$got" ]
}

# topo_cells: nvidia-smi topo -m as "ROW COLUMN CELL" lines (tab-separated matrix; the header
# names the columns, "CPU Affinity" and "NUMA Affinity" among them).
topo_cells() {
  awk -F'\t' '
    NR == 1 { for (i = 2; i <= NF; i++) { h = $i; gsub(/^ +| +$/, "", h); gsub(/ /, "_", h); col[i] = h }; next }
    /^(GPU|NIC)[0-9]+\t/ { r = $1; gsub(/ +/, "", r); for (i = 2; i <= NF; i++) { c = $i; gsub(/^ +| +$/, "", c); if (col[i] != "") print r, col[i], c } }
  ' "$OUT/topo.txt"
}

# nic_names: "NIC0 mlx5_0" lines from the topo legend.
nic_names() { sed -n 's/^ *\(NIC[0-9][0-9]*\): *\([^ ]*\) *$/\1 \2/p' "$OUT/topo.txt"; }

# check_numa SOURCE: each GPU's NUMA node (gpu_info numa_node) is topo -m's NUMA Affinity.
check_numa() {
  local src=$1
  ran "$src" || return
  local idx bus want got rc=0 n=0
  while read -r idx bus; do
    want=$(topo_cells | awk -v r="GPU$idx" '$1 == r && $2 == "NUMA_Affinity" { print $3 }')
    case $want in ""|N/A) detail "GPU$idx ($bus): topo -m gives no NUMA affinity"; continue ;; esac
    got=$(grep '^gpu_info{' "$OUT/$src.after" | grep "pci_bus_id=\"$bus\"" | sed -n 's/.*[{,]numa_node="\([^"]*\)".*/\1/p' | head -1)
    n=$((n + 1))
    if [ "$want" = "$got" ]; then detail "GPU$idx ($bus): NUMA $got"; else detail "GPU$idx ($bus): topo -m NUMA $want, collector ${got:-none}: MISMATCH"; rc=1; fi
  done <"$OUT/gpus.txt"
  [ $n -gt 0 ] || { detail "no GPU with a NUMA affinity in topo -m"; return 2; }
  return $rc
}

# check_nic_paths: every GPU-NIC cell of topo -m (PIX, PXB, PHB, NODE, SYS) is the pcie_path of
# the rnic receiver's rnic_topology_gpu_distance for that pair (topology.all_pairs).
check_nic_paths() {
  local src
  for src in $SOURCES; do [ -f "$OUT/$src.after" ] && break; done
  [ -f "$OUT/$src.after" ] || { detail "no run of the collector produced a scrape"; return 1; }
  local names; names=$(nic_names)
  [ -n "$names" ] || { detail "topo -m lists no NIC"; return 2; }
  local row col cell idx bus nic got rc=0
  while read -r row col cell; do
    case $row$col in GPU*NIC*) ;; *) continue ;; esac
    idx=${row#GPU}
    bus=$(awk -v i="$idx" '$1 == i { print $2 }' "$OUT/gpus.txt")
    nic=$(awk -v n="$col" '$1 == n { print $2 }' <<<"$names")
    got=$(grep '^rnic_topology_gpu_distance{' "$OUT/$src.after" | grep "gpu_pci_bus_id=\"$bus\"" | grep "device=\"$nic\"" | sed -n 's/.*[{,]pcie_path="\([^"]*\)".*/\1/p' | head -1)
    if [ "$cell" = "$got" ]; then detail "$row ($bus) - $col ($nic): $got"; else detail "$row ($bus) - $col ($nic): topo -m $cell, collector ${got:-none}: MISMATCH"; rc=1; fi
  done < <(topo_cells)
  return $rc
}

# --- the host group: one run of the collector's rnic and cpuuncore receivers -----------------------
# run_host: $OUT/host.{yaml,log,before,after}, or $OUT/host.failed saying what went wrong. The
# cpuuncore receiver runs where its PMUs are (it has nothing to read elsewhere).
run_host() {
  local addr="127.0.0.1:$(free_port)" uncore= receivers=rnic
  if [ -z "$SCF_SKIP" ] || [ -z "$HBM_SKIP" ]; then
    uncore="  cpuuncore:
    collection_interval: 1s
    root_path: $ROOT"
    [ -n "${DEVICE_CHECK_UNCORE_REPLAY:-}" ] && uncore="  cpuuncore:
    collection_interval: 1s
    recording: {replay: $DEVICE_CHECK_UNCORE_REPLAY}"
    receivers="rnic, cpuuncore"
  fi
  cat >"$OUT/host.yaml" <<YAML
receivers:
  rnic:
    collection_interval: 2s
    root_path: $ROOT
    topology: {all_pairs: true}
$uncore
exporters:
  prometheus:
    endpoint: $addr
    without_scope_info: true
service:
  pipelines:
    metrics: {receivers: [$receivers], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
YAML
  local ready='^[a-z]'
  [ -z "$RDMA_SKIP" ] && ready='^rnic_port_info{'
  if ! start_collector host "$OUT/host.yaml" "$addr" "$ready" "$OUT/host.before"; then
    echo "no host series served within ${READY_SECONDS}s (see $OUT/host.log)" >"$OUT/host.failed"
    return
  fi
  local pid=$COLLECTOR_PID
  sleep 3 # one more collection: the first scrape holds settled totals
  local window=$HOST_SECONDS perf_pid=
  # perf stat counts the PMU events the cpuuncore receiver reads over the same window.
  if [ -n "$PERF_EVENTS" ]; then
    window=$PERF_SECONDS
    perf stat -a -x ';' -o "$OUT/host.perf" -e "$PERF_EVENTS" -- sleep "$window" >/dev/null 2>&1 &
    perf_pid=$!
  fi
  scrape "$addr" >"$OUT/host.before" 2>/dev/null
  bnxt_counters >"$OUT/host.bnxt.before"
  if [ -n "${DEVICE_CHECK_HOST_LOAD:-}" ]; then
    say "host window: $DEVICE_CHECK_HOST_LOAD $window"
    bash -c "$DEVICE_CHECK_HOST_LOAD \"\$1\"" load "$window" >"$OUT/host.load" 2>&1 || say "the host load failed (see $OUT/host.load)"
  else
    sleep "$window"
  fi
  [ -n "$perf_pid" ] && wait "$perf_pid"
  echo "$window" >"$OUT/host.window"
  # After a load, two rnic collections more, so that the served totals hold the counters' last
  # values (rnic_bnxt_roce_only_bytes reads the files beside the last scrape).
  [ -n "${DEVICE_CHECK_HOST_LOAD:-}" ] && sleep 5
  bnxt_counters >"$OUT/host.bnxt.after"
  scrape "$addr" >"$OUT/host.after" 2>/dev/null
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  say "host run: $(grep -c '^[a-z]' "$OUT/host.after") series served by [$receivers] on $ROOT"
}

# The PMU events perf stat counts in the host window, where perf and the PMUs are: Xeon Max
# UNC_MCHBM_CAS_COUNT.RD on every uncore_hbm_N; Grace cmem_rd_data on every nvidia_scf_pmu_N and
# rd_bytes_loc on every nvidia_nvlink_c2c0_pmu_N (the receiver's socketN/cmem read is
# cmem_rd_data x 32 plus rd_bytes_loc).
PERF_SECONDS=${DEVICE_CHECK_PERF_SECONDS:-20}
PERF_EVENTS=
if command -v perf >/dev/null 2>&1; then
  for d in "$sysroot"/bus/event_source/devices/uncore_hbm_* "$sysroot"/bus/event_source/devices/nvidia_scf_pmu_* "$sysroot"/bus/event_source/devices/nvidia_nvlink_c2c0_pmu_*; do
    [ -e "$d" ] || continue
    case ${d##*/} in
      uncore_hbm_*) PERF_EVENTS="$PERF_EVENTS,${d##*/}/event=0x05,umask=0xcf/" ;;
      nvidia_scf_pmu_*) PERF_EVENTS="$PERF_EVENTS,${d##*/}/cmem_rd_data/" ;;
      nvidia_nvlink_c2c0_pmu_*) PERF_EVENTS="$PERF_EVENTS,${d##*/}/rd_bytes_loc/" ;;
    esac
  done
  PERF_EVENTS=${PERF_EVENTS#,}
fi

# check_perf_unit KIND UNIT: the collector's served cpu_memory read bytes of the socketN/KIND
# devices over the host window, against perf stat's count of the same PMU events over it: the
# bytes per count must be UNIT (the receiver's assumption), within 5 % plus two collection
# intervals (1 s each) of the window's average rate. This checks that the receiver reads the
# events perf reads, at the unit it assumes; whether the unit is the hardware's needs a load of
# known bytes (printed after).
check_perf_unit() {
  local kind=$1 unit=$2
  command -v perf >/dev/null 2>&1 || { detail "no perf on PATH"; return 2; }
  host_ran || return
  [ -s "$OUT/host.perf" ] || { detail "perf stat wrote nothing (events: $PERF_EVENTS)"; return 1; }
  awk -F';' -v kind="$kind" -v unit="$unit" -v w="$(cat "$OUT/host.window")" '
    FILENAME ~ /perf$/ {
      if ($1 !~ /^[0-9]+$/) { if ($3 != "") { printf "  perf: %s %s\n", $3, $1; bad = 1 }; next }
      if (kind == "hbm" && $3 ~ /^uncore_hbm_/) counts += $1
      if (kind == "cmem" && $3 ~ /cmem_rd_data/) counts += $1
      if (kind == "cmem" && $3 ~ /rd_bytes_loc/) c2c += $1
      next
    }
    /^interconnect_io_bytes_total\{/ && index($0, "component=\"cpu_memory\"") && index($0, "direction=\"read\"") && $0 ~ ("device=\"socket[0-9]+/" kind "\"") {
      if (FILENAME ~ /before$/) b += $NF; else { a += $NF; n++ }
    }
    END {
      if (bad) { print "  perf could not count every event"; exit 1 }
      if (n == 0) { printf "  the collector serves no cpu_memory read of socketN/%s: MISMATCH\n", kind; exit 1 }
      if (counts == 0) { printf "  perf counted no %s event in %s s\n", kind, w; exit 2 }
      served = a - b - c2c; want = unit * counts; slack = 0.05 * want + 2 * want / w
      ok = served >= want - slack && served <= want + slack
      printf "  %s s: served %.4g B%s, perf %.0f counts x %d B = %.4g B (%.3g B a count), allowed %.4g..%.4g: %s\n",
        w, served, (c2c ? sprintf(" (less C2C rd_bytes_loc %.4g B)", c2c) : ""), counts, unit, want, served / counts, want - slack, want + slack, (ok ? "ok" : "MISMATCH")
      exit !ok
    }' "$OUT/host.perf" "$OUT/host.before" "$OUT/host.after"
}

# host_check SKIP_REASON FUNCTION: SKIPs with the reason where the hardware is absent.
host_check() {
  if [ -n "$1" ]; then detail "$1"; return 2; fi
  "$2"
}
skipped() { detail "$1"; return 2; }
# host_ran: the host run produced scrapes (1 with the reason when it did not).
host_ran() {
  if [ -f "$OUT/host.failed" ]; then detail "$(cat "$OUT/host.failed")"; return 1; fi
  [ -f "$OUT/host.after" ] || { detail "the host run of the collector produced no scrape"; return 1; }
}

# rdma_ports: "DEVICE NETDEV PLANE" (NETDEV - for none) for each port the collector serves (rnic_port_info).
rdma_ports() {
  local line
  grep '^rnic_port_info{' "$OUT/host.after" | while IFS= read -r line; do
    printf '%s %s %s\n' "$(label "$line" device)" "$(label "$line" netdev | sed 's/^$/-/')" "$(label "$line" plane)"
  done
}

# The drivers the rnic receiver has an ethtool table for (receiver/rnicreceiver/ethtool.go
# ethtoolTables, keyed by the GDRVINFO driver name).
ETHTOOL_TABLES="mlx5_core bnxt_en bng_en ice i40e"

# check_driver_names: for each RDMA port's netdev (rnic_port_info netdev), `ethtool -i` (the
# GDRVINFO name, which picks the collector's ethtool table) against the driver of the RDMA
# device's PCI function (device/driver, which picks the collector's counter plan; no metric
# carries it). They must agree, naming the device where not.
check_driver_names() {
  host_ran || return
  command -v ethtool >/dev/null 2>&1 || { detail "no ethtool on PATH"; return 2; }
  local dev nd plane eth pci n=0 rc=0
  while read -r dev nd plane; do
    [ "$plane" != true ] || continue # a plane shares its main device's function and netdev
    [ "$nd" != - ] || { detail "$dev: no netdev"; continue; }
    eth=$(ethtool -i "$nd" 2>/dev/null | sed -n 's/^driver: *//p')
    eth=${eth%%\[*}
    pci=$(readlink "$sysroot/class/infiniband/${dev%/*}/device/driver" 2>/dev/null); pci=${pci##*/}
    if [ -z "$eth" ]; then detail "$dev ($nd): ethtool -i prints no driver"; continue; fi
    case $eth in ib_ipoib|bonding|team|8021q|bridge|veth|macvlan)
      detail "$dev ($nd): ethtool -i says $eth, an upper device, not the NIC's driver: not compared"; continue ;; esac
    if [ -z "$pci" ]; then detail "$dev ($nd): ethtool -i $eth; the RDMA device has no device/driver link: not compared"; continue; fi
    n=$((n + 1))
    local tab="no ethtool table (PFC and pause not read)"
    case " $ETHTOOL_TABLES " in *" $eth "*) tab="ethtool table $eth" ;; esac
    if [ "$eth" = "$pci" ]; then detail "$dev ($nd): ethtool -i $eth, PCI driver $pci, $tab"
    else detail "$dev ($nd): ethtool -i $eth, PCI driver $pci: MISMATCH"; rc=1; fi
  done < <(rdma_ports)
  [ $n -gt 0 ] || { detail "no RDMA port whose netdev and PCI driver could both be read"; return 2; }
  return $rc
}

# lnk ADDR: "CAP_SPEED CAP_WIDTH STA_SPEED STA_WIDTH" from lspci -vv -s ADDR (GT/s, lanes), or
# nothing where lspci does not show the function's link.
lnk() {
  lspci -vv -s "$1" 2>/dev/null | awk '
    /LnkCap:/ { if (match($0, /Speed [0-9.]+GT\/s/)) cs = substr($0, RSTART + 6, RLENGTH - 10)
                if (match($0, /Width x[0-9]+/)) cw = substr($0, RSTART + 7, RLENGTH - 7) }
    /LnkSta:/ { if (match($0, /Speed [0-9.]+GT\/s/)) ss = substr($0, RSTART + 6, RLENGTH - 10)
                if (match($0, /Width x[0-9]+/)) sw = substr($0, RSTART + 7, RLENGTH - 7) }
    END { if (cs != "" && cw != "" && ss != "" && sw != "") print cs, cw, ss, sw }'
}

# pci_chain ADDR: ADDR and each PCI function above it up to the root port, one a line.
pci_chain() {
  local d; d=$(readlink -f "$sysroot/bus/pci/devices/$1" 2>/dev/null) || return
  while [[ ${d##*/} =~ ^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$ ]]; do echo "${d##*/}"; d=${d%/*}; done
}

# check_link_lspci: for each RDMA NIC the collector serves rnic_topology_link_degraded for, every
# link from the NIC up to its root port in lspci -vv: a function's LnkSta against its LnkCap
# capped at the LnkCap of the port above it (pcie_bandwidth_available()). The collector must say
# degraded (1) exactly where one of those links runs below.
check_link_lspci() {
  host_ran || return
  command -v lspci >/dev/null 2>&1 || { detail "no lspci on PATH"; return 2; }
  local line dev bus got n=0 rc=0
  while IFS= read -r line; do
    dev=$(label "$line" device); bus=$(label "$line" pci_bus_id); got=${line##* }
    local chain; chain=$(pci_chain "$bus")
    [ -n "$chain" ] || { detail "$dev ($bus): not under $sysroot/bus/pci/devices: not compared"; continue; }
    local f p lf lp below=0 ev= unseen=
    while read -r f p; do
      [ -n "$p" ] || continue # the root port: its link is the one below it
      lf=$(lnk "$f"); lp=$(lnk "$p")
      if [ -z "$lf" ] || [ -z "$lp" ]; then unseen="$unseen $f"; continue; fi
      read -r r ev1 < <(awk -v f="$lf" -v p="$lp" -v a="$f" 'BEGIN {
        split(f, x, " "); split(p, y, " ")
        s = (x[1] + 0 < y[1] + 0) ? x[1] : y[1]; w = (x[2] + 0 < y[2] + 0) ? x[2] : y[2]
        b = (x[3] + 0 < s + 0) || (x[4] + 0 < w + 0)
        printf "%d %s:%sGT/s,x%s(of%sGT/s,x%s)%s\n", b, a, x[3], x[4], s, w, (b ? "BELOW" : "") }')
      [ "$r" = 1 ] && below=1
      ev="$ev $ev1"
    done < <(paste -d' ' <(printf '%s\n' "$chain") <(printf '%s\n' "$chain" | sed 1d))
    if [ -n "$unseen" ]; then detail "$dev ($bus): lspci shows no link for$unseen (it reads the capabilities as root only): not compared"; continue; fi
    n=$((n + 1))
    if [ "$below" = "$got" ]; then detail "$dev ($bus): degraded $got;$ev"
    else detail "$dev ($bus): lspci says degraded $below, collector $got: MISMATCH;$ev"; rc=1; fi
  done < <(grep '^rnic_topology_link_degraded{' "$OUT/host.after")
  [ $n -gt 0 ] || { detail "no RDMA NIC with rnic_topology_link_degraded whose path lspci shows"; return 2; }
  return $rc
}

# check_efa_operations: per port and direction, rnic_operation_io_bytes_total summed over the
# operations is at most interconnect_io_bytes_total{component="rnic"}, in the totals and in their
# growth over the host window.
check_efa_operations() {
  host_ran || return
  grep -q '^rnic_operation_io_bytes_total{' "$OUT/host.after" || { detail "the collector serves no rnic_operation_io (no EFA port)"; return 2; }
  awk '
    function lab(l, k,   r) { r = l; if (!sub(".*[{,]" k "=\"", "", r)) return ""; sub("\".*", "", r); return r }
    FNR == 1 { f++ }
    /^rnic_operation_io_bytes_total\{/ { op[f, lab($0, "device") " " lab($0, "direction")] += $NF; keys[lab($0, "device") " " lab($0, "direction")] = 1 }
    /^interconnect_io_bytes_total\{/ && index($0, "component=\"rnic\"") { io[f, lab($0, "device") " " lab($0, "direction")] = $NF }
    END {
      bad = 0; moved = 0
      for (k in keys) if (io[2, k] > 0 || op[2, k] > 0) moved = 1
      if (!moved) { print "  no bytes on any EFA port since the collector started: run it with DEVICE_CHECK_HOST_LOAD driving traffic"; exit 2 }
      for (k in keys) {
        if (!((2, k) in io)) { printf "  %s: no interconnect_io for it: MISMATCH\n", k; bad = 1; continue }
        ok = op[2, k] <= io[2, k] && op[2, k] - op[1, k] <= io[2, k] - io[1, k]
        printf "  %s: operations %.0f B (+%.0f), interconnect_io %.0f B (+%.0f)%s\n", k, op[2, k], op[2, k] - op[1, k], io[2, k], io[2, k] - io[1, k], (ok ? "" : ": MISMATCH")
        if (!ok) bad = 1
      }
      exit bad
    }' "$OUT/host.before" "$OUT/host.after"
}

# check_planes: `rdma dev show` lists every device the collector marks plane=true as type smi with
# a parent that is not itself a plane.
check_planes() {
  host_ran || return
  local planes; planes=$(rdma_ports | awk '$3 == "true" { sub("/.*", "", $1); print $1 }' | sort -u)
  [ -n "$planes" ] || { detail "the collector marks no device as a plane"; return 2; }
  command -v rdma >/dev/null 2>&1 || { detail "no rdma (iproute2) on PATH; planes: $(echo $planes)"; return 2; }
  local show; show=$(rdma dev show 2>/dev/null)
  grep -qw type <<<"$show" || { detail "rdma dev show prints no type (iproute2 without SMI support); planes: $(echo $planes)"; return 2; }
  local p line parent rc=0
  for p in $planes; do
    line=$(grep -E "^[0-9]+: $p:" <<<"$show")
    parent=$(sed -n 's/.* parent \([^ ]*\).*/\1/p' <<<"$line")
    if [ -n "$line" ] && grep -qiw 'type smi' <<<"$line" && [ -n "$parent" ] && ! grep -qx "$parent" <<<"$planes"; then
      detail "$p: type smi, parent $parent"
    else detail "$p: rdma dev show: '${line:-not listed}': MISMATCH"; rc=1; fi
  done
  return $rc
}

# check_irdma_retrans: each retransmission counter file of an irdma port (tcpRetransSegs before
# Linux 6.16, RetransSegs from it) is served as rnic_transport_events_total{counter=...}.
check_irdma_retrans() {
  present "$sysroot/class/infiniband/irdma*" || { detail "no irdma device"; return 2; }
  host_ran || return
  local d f dev rc=0 n=0
  detail "kernel $(uname -r)"
  for d in "$sysroot"/class/infiniband/irdma*/ports/*/hw_counters; do
    dev=${d%/hw_counters}; dev="$(basename "${dev%/ports/*}")/${dev##*/}"
    for f in $(ls "$d" 2>/dev/null | grep -i retrans); do
      n=$((n + 1))
      if grep '^rnic_transport_events_total{' "$OUT/host.after" | grep "device=\"$dev\"" | grep -q "counter=\"$f\""; then detail "$dev: $f served"
      else detail "$dev: $f not served: MISMATCH"; rc=1; fi
    done
  done
  [ $n -gt 0 ] || { detail "no retransmission counter in the irdma hw_counters"; return 2; }
  return $rc
}

# check_burst_read_cost: what one read of the byte counter the rnic receiver's fast sampler reads
# (bursts.period) costs on this node, and how often that counter moves. On mlx5 each
# counters/port_xmit_data read is a PMA query through the firmware (drivers/infiniband/core/
# sysfs.c show_pma_counter -> get_perf_mad -> mlx5 mad.c process_pma_cmd), far dearer than a file
# in a tmpfs; how often the firmware renews the counter is not documented. 200 reads are timed
# (open, read, close each, through bash: the sampler keeps the file open and preads it, which
# saves the open); then the counter is read as fast as it can be for DEVICE_CHECK_BURST_SECONDS,
# with DEVICE_CHECK_HOST_LOAD driving traffic where it is set, and the times it changed give its
# update granularity. A measurement: it passes with its figures, and SKIPs the granularity where
# the counter did not move.
check_burst_read_cost() {
  local f files n ports t0 t1 us v last changes=() secs=${DEVICE_CHECK_BURST_SECONDS:-2} loadpid=
  files=$(compgen -G "$sysroot/class/infiniband/*/ports/*/counters/port_xmit_data" || compgen -G "$sysroot/class/infiniband/*/ports/*/hw_counters/tx_bytes")
  [ -n "$files" ] || { detail "no port with counters/port_xmit_data or hw_counters/tx_bytes"; return 2; }
  f=$(head -1 <<<"$files")
  ports=$(wc -l <<<"$files")
  read -r v <"$f" || { detail "$f: not readable"; return 1; }
  t0=$EPOCHREALTIME
  for ((n = 0; n < 200; n++)); do read -r v <"$f"; done
  t1=$EPOCHREALTIME
  us=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) * 1e6 / 200 }')
  detail "$f: one read ${us} us (200 reads)"
  # A pass reads both data counters and the netdev's two byte counters of every port.
  awk -v us="$us" -v p="$ports" 'BEGIN { pass = us * 4 * p; printf "  a pass over %d ports (4 counters each): %.0f us: %.2f %% of a core at bursts.period 10ms, %.3f %% at 100ms%s (at most: each read here opens the file, the sampler preads it)\n", p, pass, pass / 100, pass / 1000, (pass > 10000 ? "; 10ms cannot be held here" : "") }'
  if [ -n "${DEVICE_CHECK_HOST_LOAD:-}" ]; then
    $DEVICE_CHECK_HOST_LOAD "$secs" >"$OUT/burst.load" 2>&1 &
    loadpid=$!
  fi
  read -r last <"$f"
  t0=$EPOCHREALTIME
  while awk -v a="$t0" -v b="$EPOCHREALTIME" -v s="$secs" 'BEGIN { exit !(b - a < s) }'; do
    read -r v <"$f"
    if [ "$v" != "$last" ]; then changes+=("$EPOCHREALTIME"); last=$v; fi
  done
  [ -n "$loadpid" ] && wait "$loadpid"
  if [ ${#changes[@]} -lt 3 ]; then
    detail "update granularity: the counter changed ${#changes[@]} times in ${secs} s (no traffic on the port);"
    detail "run with DEVICE_CHECK_HOST_LOAD driving ib_write_bw through it to measure it"
    return 0
  fi
  printf '%s\n' "${changes[@]}" | awk 'NR > 1 { printf "%.3f\n", ($1 - prev) * 1000 } { prev = $1 }' | sort -n |
    awk '{ d[++n] = $1 } END { printf "  update granularity: %d changes, interval between changes min %.2f ms, median %.2f ms, max %.2f ms\n", n + 1, d[1], d[int((n + 1) / 2)], d[n] }'
}

# solo_run NAME SECONDS READY RECEIVER CONFIG [DURING]: runs the collector with RECEIVER alone,
# CONFIG its lines ($OUT/NAME.yaml, NAME.log), until its scrape has a line beginning with READY (a
# grep pattern; READY_SECONDS at most), then measures its CPU over a window (utime + stime of
# /proc/PID/stat): DURING runs in it as `DURING ADDR SECONDS NAME` (ADDR the Prometheus endpoint),
# or the window is a sleep of SECONDS. Keeps the scrapes just before and after the window in
# $OUT/NAME.before and $OUT/NAME.prom and its length in seconds in $OUT/NAME.window, and prints the
# CPU, % of a core over it. Returns 1 where nothing matched READY.
solo_run() {
  local name=$1 secs=$2 ready=$3 receiver=$4 config=$5 during=${6:-} addr="127.0.0.1:$(free_port)"
  cat >"$OUT/$name.yaml" <<YAML
receivers:
  $receiver:
$config
exporters:
  prometheus: {endpoint: $addr, without_scope_info: true}
service:
  pipelines:
    metrics: {receivers: [$receiver], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
YAML
  start_collector "$name" "$OUT/$name.yaml" "$addr" "$ready" "$OUT/$name.before" || return 1
  local pid=$COLLECTOR_PID t0 t1 w0 w1
  w0=$EPOCHREALTIME t0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
  if [ -n "$during" ]; then "$during" "$addr" "$secs" "$name"; else sleep "$secs"; fi
  t1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat") w1=$EPOCHREALTIME
  scrape "$addr" >"$OUT/$name.prom" 2>/dev/null
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  awk -v a="$w0" -v b="$w1" 'BEGIN { printf "%.3f\n", b - a }' >"$OUT/$name.window"
  awk -v a="$t0" -v b="$t1" -v hz="$(getconf CLK_TCK)" -v s="$(cat "$OUT/$name.window")" 'BEGIN { printf "%.2f\n", (b - a) / hz / s * 100 }'
}

# uncore_run PERIOD: the cpuuncore receiver alone (bursts.period PERIOD, 0 for none) for
# DEVICE_CHECK_HOST_SECONDS after its first series (solo_run: $OUT/uncore-PERIOD.prom the last
# scrape); prints the collector's CPU over the window, % of a core. Returns 1 where it served no
# interconnect_io_bytes_total.
uncore_run() {
  local bursts=
  [ "$1" != 0 ] && bursts="    bursts: {period: $1}"
  solo_run "uncore-$1" "$HOST_SECONDS" '^interconnect_io_bytes_total{' cpuuncore "    collection_interval: 1s
$bursts"
}

# check_uncore_bursts: the cpuuncore receiver's fast sampler on this node's own uncore PMUs. What it
# costs: the collector's CPU with bursts.period 10ms and 100ms beside none (a live uncore read may
# cost more than the 3.6 us of a software-event group measured where the README's figures come
# from: the kernel reads another package's event with an IPI). That it works: every memory series
# has its peak at 10ms, and the host-memory reads of a running machine peak above 0. FAIL where
# either does not hold.
check_uncore_bursts() {
  local base p10 p100 peaks top
  base=$(uncore_run 0) || { detail "the cpuuncore receiver served no interconnect_io_bytes_total (see $OUT/uncore-0.log)"; return 1; }
  p10=$(uncore_run 10ms) || { detail "nothing served with bursts.period 10ms (see $OUT/uncore-10ms.log)"; return 1; }
  p100=$(uncore_run 100ms) || { detail "nothing served with bursts.period 100ms (see $OUT/uncore-100ms.log)"; return 1; }
  detail "collector CPU over ${HOST_SECONDS} s: ${base} % of a core without the fast sampler, ${p10} % at 10ms, ${p100} % at 100ms"
  detail "$(grep -c '^interconnect_io_bytes_total{component="cpu_' "$OUT/uncore-10ms.prom") cpu_memory/cpu_pcie series"
  peaks=$(grep '^cpuuncore_burst_peak_rate_bytes_per_second{' "$OUT/uncore-10ms.prom")
  [ -n "$peaks" ] || { detail "no cpuuncore_burst_peak_rate served at 10ms: MISMATCH"; return 1; }
  detail "$(wc -l <<<"$peaks") peak series at 10ms"
  top=$(grep 'component="cpu_memory"' <<<"$peaks" | grep 'direction="read"' | awk '{ if ($NF > m) m = $NF } END { printf "%.0f", m }')
  if awk -v t="${top:-0}" 'BEGIN { exit !(t > 0) }'; then detail "the highest host-memory read peak: $top B/s"
  else detail "every host-memory read peak is 0 on a running machine: MISMATCH"; return 1; fi
}

# --- the gpu receiver's fast sampler ------------------------------------------------------------
# gpu_burst_run PERIOD: the gpu receiver alone (source nvml, collection 1s; bursts.period PERIOD, 0
# for none) for DEVICE_CHECK_SECONDS after its first gpu_pcie series (solo_run:
# $OUT/gpu-burst-PERIOD.{yaml,log,before,prom,window}), scraped once a second in the window, each
# run alike so that the scrapes cost each the same ($OUT/gpu-burst-PERIOD.during, one scrape after
# the other). The 10ms run drives GPU 0's traffic in its window (load: $OUT/gpu-burst-10ms.load),
# then waits DEVICE_CHECK_SETTLE seconds and scrapes once more, so that the last passes are served.
# Prints the collector's CPU over the window, % of a core; returns 1 where no gpu_pcie series came.
gpu_burst_run() {
  local bursts='' during=gpu_burst_idle
  [ "$1" != 0 ] && bursts="
    bursts: {period: $1}"
  [ "$1" = 10ms ] && during=gpu_burst_loaded
  solo_run "gpu-burst-$1" "$SECONDS_PER_SOURCE" '^interconnect_io_bytes_total{component="gpu_pcie"' gpu "    source: nvml
    collection_interval: 1s
    retry_interval: 10s
    root_path: $ROOT$bursts" "$during"
}
# gpu_burst_window ADDR SECONDS NAME [load]: solo_run's window of gpu_burst_run.
gpu_burst_window() {
  local addr=$1 secs=$2 name=$3 pid
  : >"$OUT/$name.during"
  if [ "${4:-}" = load ]; then load "$secs" "$OUT/$name.load" & pid=$!; else sleep "$secs" & pid=$!; fi
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    scrape "$addr" >>"$OUT/$name.during" 2>/dev/null
  done
  wait "$pid"
  [ "${4:-}" = load ] || return 0
  sleep "$SETTLE"
  scrape "$addr" >>"$OUT/$name.during" 2>/dev/null
}
gpu_burst_idle() { gpu_burst_window "$1" "$2" "$3"; }
gpu_burst_loaded() { gpu_burst_window "$1" "$2" "$3" load; }

# pcie_lane_gbs GEN: one lane's data rate of PCIe generation GEN, GB/s (after the line code: 8b/10b
# for Gen1-2, 128b/130b for Gen3-5, Gen6's FLIT mode); empty for another.
pcie_lane_gbs() {
  case $1 in 1) echo 0.25 ;; 2) echo 0.5 ;; 3) echo 0.985 ;; 4) echo 1.969 ;; 5) echo 3.938 ;; 6) echo 7.563 ;; esac
}

# check_gpu_bursts: the gpu receiver's fast sampler (bursts.period) of NVML's cumulative PCIe byte
# counters 197/198 on this node's driver (receiver/gpureceiver README.md "Microbursts": whether the
# driver serves them, how often it refreshes them and the timestamp it gives a stale value are
# unverified). What it costs: the collector's CPU with bursts.period 10ms and 100ms beside none; the
# 10ms run's excess over 100 passes a second and the GPUs is about one nvmlDeviceGetFieldValues of
# 197/198 (an ioctl per GPU; the fake library's costs 4-6 us). That it works, on GPU 0 under the
# 10ms run's traffic, per direction (transmit is device->host, receive host->device), the highest
# gpu_burst_peak_rate of the window's scrapes:
#   - at least TOL_LOW x the window's average: the served gpu_pcie growth between the scrapes
#     around the window over its seconds plus one collection (the totals lag up to one collection
#     at each end, so this is at most the true average), and where the traffic generator says what
#     it moved, TOL_LOW x its own average too. No window over the traffic can be below its average;
#     the tolerance because on Hopper and later the totals are GPM's rates 20/21, the peak another
#     reading, 197/198;
#   - at most TOL_HIGH (TLP headers) x the link's maximum: nvidia-smi's pcie.link.gen.max x
#     pcie.link.width.max (per lane 0.25, 0.5, 0.985, 1.969, 3.938, 7.563 GB/s for Gen1-6). A driver
#     that stamps a value it has not refreshed with the time of the call makes the windows
#     alternate between nothing and twice the rate: a copy near the link's rate then peaks above it.
# FAIL where either does not hold or GPU 0 has no peak at 10ms; SKIP a direction (all: the check)
# where the receiver logged that the driver answers NOT_SUPPORTED for 197/198: it serves no peak.
check_gpu_bursts() {
  case " $SOURCES " in *" nvml "*) ;; *) detail "DEVICE_CHECK_SOURCES ($SOURCES) has no nvml: the fast sampler reads NVML's counters only"; return 2 ;; esac
  ran nvml || return
  local base p10 p100 f="$OUT/gpu-burst-10ms" n
  base=$(gpu_burst_run 0) || { detail "the gpu receiver (source nvml) served no gpu_pcie series within ${READY_SECONDS}s (see $OUT/gpu-burst-0.log)"; return 1; }
  p10=$(gpu_burst_run 10ms) || { detail "nothing served with bursts.period 10ms (see $f.log)"; return 1; }
  p100=$(gpu_burst_run 100ms) || { detail "nothing served with bursts.period 100ms (see $OUT/gpu-burst-100ms.log)"; return 1; }
  n=$(wc -l <"$OUT/gpus.txt")
  detail "collector CPU (gpu receiver alone, source nvml, collection 1s, a scrape a second) over $(cat "$OUT/gpu-burst-0.window") s: ${base} % of a core without the fast sampler, ${p10} % at 10ms (GPU 0 traffic: $LOAD_KIND), ${p100} % at 100ms"
  awk -v b="$base" -v p="$p10" -v q="$p100" -v n="$n" 'BEGIN {
      d = p - b; e = q - b; if (d < 0) d = 0; if (e < 0) e = 0
      printf "  the sampler: %.2f %% of a core at 10ms, about %.1f us a pass over %d GPUs (%.1f us a GPU); %.2f %% at 100ms, about %.1f us a pass\n", d, d * 100, n, d * 100 / n, e, e * 1000
      print "  (differences of two CPU readings over one window each: a busy machine reads high)"
    }'
  grep -h "cannot hold bursts.period" "$f.log" "$OUT/gpu-burst-100ms.log" 2>/dev/null | sed 's/^.*cannot hold/  the collector: cannot hold/' | head -2
  local bus dev all peaks
  bus=$(awk '$1 == 0 { print $2 }' "$OUT/gpus.txt")
  dev=$(label "$(grep '^interconnect_io_bytes_total{component="gpu_pcie"' "$f.prom" | grep "pci_bus_id=\"$bus\"" | head -1)" device)
  grep -q "^interconnect_io_bytes_total{component=\"gpu_c2c\".*pci_bus_id=\"$bus\"" "$f.prom" &&
    detail "GPU 0 ($bus) has a C2C link: its host copies cross it, so the PCIe peaks carry little of the traffic"
  all=$(grep -hc '^gpu_burst_peak_rate_bytes_per_second{' "$f.prom")
  detail "$all peak series at 10ms, $(grep -c '^gpu_burst_peak_rate_bytes_per_second{.*burst_window="100ms"' "$OUT/gpu-burst-100ms.prom") at 100ms, $(grep -c '^gpu_burst_peak_rate_bytes_per_second{' "$OUT/gpu-burst-0.prom") without the sampler"
  # The link's maximum.
  local link gen width lane linkmax=
  link=$(nvidia-smi -i 0 --query-gpu=pcie.link.gen.max,pcie.link.width.max --format=csv,noheader,nounits 2>/dev/null | head -1 | tr -d ' ')
  gen=${link%%,*} width=${link#*,}
  lane=$(pcie_lane_gbs "$gen")
  if [ -n "$lane" ] && [[ $width =~ ^[0-9]+$ ]]; then
    linkmax=$(awk -v l="$lane" -v w="$width" 'BEGIN { printf "%.6g", l * w * 1e9 }')
    detail "GPU 0 ($bus, $dev): link maximum Gen$gen x$width, $lane GB/s a lane: $linkmax B/s"
  else
    detail "GPU 0 ($bus): nvidia-smi gives no link maximum (pcie.link.gen.max,pcie.link.width.max: '$link'): the upper bound not checked"
  fi
  # What the generator moved.
  local up='' down='' secs=''
  if ! read -r up down secs <"$f.load" 2>/dev/null; then
    detail "the traffic generator wrote nothing (see $f.load.err): peaks against the served average only"; up=
  elif [ "$up" = "?" ]; then
    detail "the traffic generator ($LOAD_KIND) does not say what it moved: peaks against the served average only"; up=
  else
    detail "traffic driven on GPU 0 ($LOAD_KIND): host->device $up B, device->host $down B in $secs s"
  fi
  local dir driven peak b a rc=0 compared=0 said
  for dir in transmit receive; do
    driven=; [ -n "$up" ] && { driven=$up; [ $dir = transmit ] && driven=$down; }
    peak=$(cat "$f.during" "$f.prom" | samples /dev/stdin gpu_burst_peak_rate_bytes_per_second component=gpu_pcie direction=$dir pci_bus_id="$bus" burst_window=10ms |
      awk '{ if (NR == 1 || $1 > m) m = $1 } END { if (NR) printf "%.17g %d\n", m, NR }')
    if [ -z "$peak" ]; then
      said=$(grep -F "The fast sampler cannot read the GPU's PCIe byte counters" "$f.log" | grep -F "\"device\": \"$dev\"" | head -1)
      if grep -q '"error": "not supported' <<<"$said"; then
        detail "gpu_pcie $dir: no peak; the receiver says the driver does not support 197/198 for $dev:"
        detail "  ${said#*The fast sampler}"
        continue
      fi
      detail "gpu_pcie $dir of $bus: no gpu_burst_peak_rate served at 10ms: MISMATCH"
      grep -h -i "fast sampler\|burst" "$f.log" | head -3 | sed 's/^/    /'
      rc=1; continue
    fi
    compared=1
    b=$(value "$f.before" interconnect_io_bytes_total component=gpu_pcie direction=$dir pci_bus_id="$bus")
    a=$(value "$f.prom" interconnect_io_bytes_total component=gpu_pcie direction=$dir pci_bus_id="$bus")
    if [ -z "$b" ] || [ -z "$a" ]; then detail "gpu_pcie $dir of $bus: interconnect_io not served: MISMATCH"; rc=1; continue; fi
    awk -v pk="${peak% *}" -v np="${peak#* }" -v b="$b" -v a="$a" -v w="$(cat "$f.window")" -v d="$driven" -v s="$secs" \
      -v lm="$linkmax" -v lo=$TOL_LOW -v hi=$TOL_HIGH -v dir=$dir '
      function verdict(ok) { if (!ok) bad = 1; return ok ? "ok" : "MISMATCH" }
      BEGIN {
        avg = (a - b) / (w + 1)
        printf "  gpu_pcie %s: peak %.4g B/s (the highest of %d scrapes)\n", dir, pk, np
        printf "  gpu_pcie %s: at least %.1f x the served average %.4g B/s (%.4g B in %.1f s + 1 s): %s\n", dir, lo, avg, a - b, w, verdict(pk >= lo * avg)
        if (d != "" && s > 0) printf "  gpu_pcie %s: at least %.1f x the driven average %.4g B/s (%.4g B in %s s): %s\n", dir, lo, d / s, d, s, verdict(pk >= lo * d / s)
        if (lm != "") printf "  gpu_pcie %s: at most %.1f x the link maximum %.4g B/s (%.3g of it): %s\n", dir, hi, lm, pk / lm, verdict(pk <= hi * lm)
        exit bad
      }' || rc=1
  done
  [ $rc -eq 0 ] && [ $compared -eq 0 ] && return 2
  return $rc
}

# --- the load run: the cpuuncore (and rnic) receivers across loads of known bytes ------------------
# Grace and Xeon Max: the collector runs once more, its cpuuncore receiver alone with the rnic
# receiver beside it where there are RDMA devices, scraped between windows of DEVICE_CHECK_MEM_SECONDS:
#   idle   nothing run: the machine's own traffic, the background the other windows are read against;
#   read   the memory load reading (mem_load.c, or DEVICE_CHECK_MEM_LOAD), its memory on one node;
#   write  the memory load writing;
#   host   DEVICE_CHECK_HOST_LOAD (Grace, where set): RDMA traffic through one NIC;
#   gdr    DEVICE_CHECK_GDR_LOAD (Grace, where set): GPUDirect RDMA traffic.
# $OUT/load.order lists "WINDOW BEFORE AFTER SECONDS" (the scrapes around it, the seconds between
# them); each window's load writes $OUT/load.WINDOW.{out,err,rc}. On Grace the PCIe series are per
# root port (pcie.granularity port). $OUT/load.failed says what went wrong; $OUT/load.memskip why
# there was no memory load.
MEM_SECONDS=${DEVICE_CHECK_MEM_SECONDS:-15}
MEM_KIND=none MEM_WHY=
prepare_mem_load() {
  if [ -n "${DEVICE_CHECK_MEM_LOAD:-}" ]; then MEM_KIND=custom; return; fi
  local c
  for c in cc gcc clang; do
    command -v "$c" >/dev/null 2>&1 || continue
    if "$c" -O2 -pthread -o "$OUT/mem_load" "$HERE/mem_load.c" >"$OUT/mem_load.log" 2>&1; then MEM_KIND=cc; return; fi
    MEM_WHY="$c could not build $HERE/mem_load.c (see $OUT/mem_load.log)"
    return
  done
  MEM_WHY="no C compiler (cc, gcc or clang) to build $HERE/mem_load.c: install one, or set DEVICE_CHECK_MEM_LOAD"
}

# mem_nodes KIND: "MEMORY_NODE CPU_NODE" for the memory load of KIND (cmem: the first node with
# CPUs, Grace's CPU memory; hbm: DEVICE_CHECK_HBM_NODE, or the first node without CPUs that has
# memory, which is the HBM in flat mode), from sysfs under DEVICE_CHECK_ROOT; nothing, and the
# reason on stderr, where there is no HBM node.
mem_nodes() {
  local kind=$1 d cpu= mem=
  for d in $(printf "%s\n" "$sysroot"/devices/system/node/node[0-9]* | sort -V); do
    if [ -n "$(tr -d ' \n' <"$d/cpulist" 2>/dev/null)" ]; then
      [ -z "$cpu" ] && cpu=${d##*node}
    elif [ -z "$mem" ] && [ "$(awk '/MemTotal/ { print $(NF - 1) }' "$d/meminfo" 2>/dev/null)" -gt 0 ] 2>/dev/null; then
      mem=${d##*node}
    fi
  done
  cpu=${cpu:-0}
  if [ "$kind" = cmem ]; then echo "$cpu $cpu"; return; fi
  if [ -n "${DEVICE_CHECK_HBM_NODE:-}" ]; then echo "$DEVICE_CHECK_HBM_NODE $cpu"; return; fi
  if [ -n "$mem" ]; then echo "$mem $cpu"; return; fi
  echo "no NUMA node without CPUs that has memory under $sysroot/devices/system/node (flat mode's HBM): in HBM-only mode set DEVICE_CHECK_HBM_NODE=0; in cache mode the HBM caches DDR and its CAS count is not the load's bytes" >&2
  return 1
}

# mem_load MODE SECONDS MEMORY_NODE CPU_NODE: runs the memory load, which prints "read_bytes
# write_bytes seconds".
mem_load() {
  local mode=$1 secs=$2 node=$3 cpu=$4
  case $MEM_KIND in
    custom) bash -c "$DEVICE_CHECK_MEM_LOAD \"\$1\" \"\$2\" \"\$3\"" load "$mode" "$secs" "$node" ;;
    cc) if command -v numactl >/dev/null 2>&1; then numactl --cpunodebind="$cpu" --membind="$node" "$OUT/mem_load" "$mode" "$secs"
        else "$OUT/mem_load" "$mode" "$secs"; fi ;;
  esac
}

# window NAME PREV COMMAND...: runs COMMAND (its output into $OUT/load.NAME.{out,err,rc}), scrapes
# into $OUT/load.NAME.prom and appends the window to $OUT/load.order; PREV is the scrape before.
LOAD_ADDR= LOAD_T=
window() {
  local name=$1 prev=$2; shift 2
  "$@" >"$OUT/load.$name.out" 2>"$OUT/load.$name.err"
  echo $? >"$OUT/load.$name.rc"
  scrape "$LOAD_ADDR" >"$OUT/load.$name.prom" 2>/dev/null
  local t=$EPOCHREALTIME
  echo "$name $prev $OUT/load.$name.prom $(awk -v a="$LOAD_T" -v b="$t" 'BEGIN { printf "%.3f", b - a }')" >>"$OUT/load.order"
  LOAD_T=$t
}
run_cmd() { bash -c "$1 \"\$1\"" load "$MEM_SECONDS"; }

run_load() {
  local addr="127.0.0.1:$(free_port)" src rnic= pcie= receivers=cpuuncore kind=hbm
  [ -z "$SCF_SKIP" ] && kind=cmem
  if [ -n "${DEVICE_CHECK_UNCORE_REPLAY:-}" ]; then src="    recording: {replay: $DEVICE_CHECK_UNCORE_REPLAY}"
  else src="    root_path: $ROOT"; fi
  [ -z "$SCF_SKIP" ] && pcie="    pcie: {granularity: port}"
  if [ -z "$RDMA_SKIP" ]; then rnic="  rnic: {collection_interval: 1s, root_path: $ROOT}"; receivers="cpuuncore, rnic"; fi
  cat >"$OUT/load.yaml" <<YAML
receivers:
  cpuuncore:
    collection_interval: 1s
$src
$pcie
$rnic
exporters:
  prometheus: {endpoint: $addr, without_scope_info: true}
service:
  pipelines:
    metrics: {receivers: [$receivers], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
YAML
  : >"$OUT/load.order"
  prepare_mem_load
  local nodes
  if [ "$MEM_KIND" = none ]; then echo "$MEM_WHY" >"$OUT/load.memskip"
  elif nodes=$(mem_nodes "$kind" 2>"$OUT/load.memskip"); then
    rm -f "$OUT/load.memskip"
    read -r MEM_NODE CPU_NODE <<<"$nodes"
    local how="pinned by numactl --cpunodebind=$CPU_NODE --membind=$MEM_NODE"
    [ "$MEM_KIND" = custom ] && how="DEVICE_CHECK_MEM_LOAD, memory on node $MEM_NODE"
    if [ "$MEM_KIND" = cc ] && ! command -v numactl >/dev/null 2>&1; then
      how="not pinned: no numactl (the kernel places its memory on the node it runs on; every socket's series are summed)"
      # The HBM of flat mode is a node without CPUs: only a memory policy puts the load there.
      [ "$MEM_NODE" != "$CPU_NODE" ] && echo "no numactl to put the memory load on the HBM node $MEM_NODE: install numactl, or set DEVICE_CHECK_MEM_LOAD" >"$OUT/load.memskip"
    fi
    echo "$MEM_KIND, $how" >"$OUT/load.mem"
  fi
  if ! start_collector load "$OUT/load.yaml" "$addr" '^interconnect_io_bytes_total{component="cpu_' "$OUT/load.0.prom"; then
    echo "the load run's cpuuncore receiver served no cpu_memory or cpu_pcie series within ${READY_SECONDS}s (see $OUT/load.log)" >"$OUT/load.failed"
    return
  fi
  local pid=$COLLECTOR_PID
  sleep 2 # one more collection: the first scrape holds settled totals
  LOAD_ADDR=$addr
  scrape "$addr" >"$OUT/load.0.prom" 2>/dev/null
  LOAD_T=$EPOCHREALTIME
  local prev="$OUT/load.0.prom" w
  say "load run: windows of ${MEM_SECONDS}s on [$receivers]"
  window idle "$prev" sleep "$MEM_SECONDS"; prev="$OUT/load.idle.prom"
  if [ ! -f "$OUT/load.memskip" ]; then
    for w in read write; do window "$w" "$prev" mem_load "$w" "$MEM_SECONDS" "$MEM_NODE" "$CPU_NODE"; prev="$OUT/load.$w.prom"; done
  fi
  if [ -z "$SCF_SKIP" ] && [ -n "${DEVICE_CHECK_HOST_LOAD:-}" ]; then window host "$prev" run_cmd "$DEVICE_CHECK_HOST_LOAD"; prev="$OUT/load.host.prom"; fi
  if [ -z "$SCF_SKIP" ] && [ -n "${DEVICE_CHECK_GDR_LOAD:-}" ]; then window gdr "$prev" run_cmd "$DEVICE_CHECK_GDR_LOAD"; fi
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}

# win NAME: "BEFORE AFTER SECONDS" of the load run's window NAME (nothing where it was not run).
win() { awk -v n="$1" '$1 == n { print $2, $3, $4 }' "$OUT/load.order" 2>/dev/null; }

# load_ran: the load run produced scrapes (1 with the reason when it did not).
load_ran() {
  if [ -f "$OUT/load.failed" ]; then detail "$(cat "$OUT/load.failed")"; return 1; fi
  [ -n "$(win idle)" ] || { detail "the load run produced no scrape"; return 1; }
}

# grow BEFORE AFTER COMPONENT DIRECTIONS DEVICE_RE: the growth of interconnect_io_bytes_total of
# COMPONENT between two scrapes, summed over DIRECTIONS (space-separated) and the devices matching
# DEVICE_RE; fails where the later scrape has none of them.
grow() {
  awk -v comp="$3" -v dirs=" $4 " -v re="^($5)\$" '
    function lab(l, k,   r) { r = l; if (!sub(".*[{,]" k "=\"", "", r)) return ""; sub("\".*", "", r); return r }
    index($0, "interconnect_io_bytes_total{") == 1 && lab($0, "component") == comp && index(dirs, " " lab($0, "direction") " ") && lab($0, "device") ~ re {
      f = (FILENAME == ARGV[1]) ? 1 : 2; v[f] += $NF; n[f]++
    }
    END { if (!n[2]) exit 1; printf "%.17g\n", v[2] - v[1] }' "$1" "$2"
}

# check_mem_bytes KIND UNIT: the memory load's bytes against the socketN/KIND cpu_memory bytes the
# collector served over its windows (all sockets summed: the load's node is on one, the others'
# traffic is background like the rest). Reads are compared in the read window, writes in the write
# window, each against what the load says it moved:
#   - at least 0.9 x driven less two seconds of the driven rate: the buffer is 8 times the largest
#     last-level cache, so at most an eighth of a pass is served from the cache, and the served
#     totals lag by up to one 1 s collection at the window's end;
#   - at most 1.5 x driven plus the background: the idle window's growth over its seconds, over
#     the window's seconds (the machine's own traffic; on Grace the GPU's C2C reads are part of
#     cmem). 1.5 leaves room for the kernel zeroing the buffer's pages at its first touch, the
#     write-back of dirty lines and the load's own code, and still fails a unit twice the true one
#     (the receiver's x UNIT: cmem_rd_data x 32 on Grace, 64 B a CAS on Xeon Max), as it fails x32
#     and /32. Reads in the write window are not compared: a store may cost a read for ownership.
# Each line also says what unit the load implies: UNIT x (served - background) / driven.
check_mem_bytes() {
  local kind=$1 unit=$2
  load_ran || return
  if [ -f "$OUT/load.memskip" ]; then detail "$(cat "$OUT/load.memskip")"; return 2; fi
  detail "memory load: $(cat "$OUT/load.mem")"
  local ib ia is rc=0 w dir col
  read -r ib ia is <<<"$(win idle)"
  for w in read write; do
    dir=$w; col=1; [ $w = write ] && col=2
    local b a s driven dsecs served bg
    read -r b a s <<<"$(win $w)"
    if [ "$(cat "$OUT/load.$w.rc")" != 0 ] || ! read -r driven dsecs < <(awk -v c=$col 'NF >= 3 { print $c, $3; exit }' "$OUT/load.$w.out"); then
      detail "the $w load failed or said nothing (see $OUT/load.$w.out, $OUT/load.$w.err)"; rc=1; continue
    fi
    if ! served=$(grow "$b" "$a" cpu_memory "$dir" "socket[0-9]+/$kind") || ! bg=$(grow "$ib" "$ia" cpu_memory "$dir" "socket[0-9]+/$kind"); then
      detail "$w: the collector serves no cpu_memory $dir of socketN/$kind: MISMATCH"; rc=1; continue
    fi
    awk -v w=$w -v served="$served" -v d="$driven" -v ds="$dsecs" -v s="$s" -v bgi="$bg" -v is="$is" -v unit="$unit" -v k=$TOL_SAMPLES_S '
      BEGIN {
        bg = bgi / is * s; if (bg < 0) bg = 0
        lo = 0.9 * d - k * d / ds; hi = 1.5 * d + bg
        ok = d > 0 && served >= lo && served <= hi
        printf "  %s window (%.1f s): served %.4g B, driven %.4g B in %s s, background %.4g B; allowed %.4g..%.4g B: %s; implied unit %.4g B (assumed %d)\n",
          w, s, served, d, ds, bg, lo, hi, (ok ? "ok" : "MISMATCH"), (d > 0 ? unit * (served - bg) / d : 0), unit
        exit !ok
      }' || rc=1
  done
  return $rc
}

check_grace_cmem() {
  local a b
  check_perf_unit cmem 32; a=$?
  check_mem_bytes cmem 32; b=$?
  combine $a $b
}
check_hbm_bytes() {
  local a b
  check_perf_unit hbm 64; a=$?
  check_mem_bytes hbm 64; b=$?
  combine $a $b
}
# combine RC...: 1 where any failed, else 0 where any passed, else 2.
combine() {
  local r out=2
  for r in "$@"; do
    case $r in 1) return 1 ;; 0) out=0 ;; esac
  done
  return $out
}

# check_grace_root_port: in the host window of the load run (DEVICE_CHECK_HOST_LOAD, RDMA traffic
# through one NIC), the NIC that carried it is the rnic device whose bytes grew most; its root port
# is the top of its PCI path in sysfs (class/infiniband/<dev>/device up to the root port). The
# cpu_pcie series (per root_port bit, socketN/pcie/portI) that grew most must be that root port:
#   - its pci_bus_id, where the collector serves one, must be the NIC's root port;
#   - where it serves none (the receiver has no mapping from root_port bits to PCI addresses), it
#     must be on the NIC's NUMA node, and the pairing found is printed: the mapping to record;
#   - and it must have carried at least half the NIC's bytes: the PCIe PMU counts the NIC's DMA
#     payload, the NIC counts it with its headers, and the per-port groups share the PMU's counters
#     (running_ratio below 1: extrapolated), so they need not agree closely, but a port that
#     carried a fraction of the traffic is not the NIC's.
# Skipped, naming the variable, without DEVICE_CHECK_HOST_LOAD (a peer is needed).
check_grace_root_port() {
  if [ -z "${DEVICE_CHECK_HOST_LOAD:-}" ]; then
    detail "needs RDMA traffic through one NIC to a peer, which this script cannot generate: set DEVICE_CHECK_HOST_LOAD"
    detail "to a command taking the seconds, e.g. 'ib_write_bw -d mlx5_0 -D' with the peer's address, its server started on the peer"
    return 2
  fi
  [ -z "$RDMA_SKIP" ] || { detail "$RDMA_SKIP: no NIC to carry the traffic"; return 2; }
  load_ran || return
  local b a s
  read -r b a s <<<"$(win host)"
  [ "$(cat "$OUT/load.host.rc")" = 0 ] || detail "DEVICE_CHECK_HOST_LOAD exited $(cat "$OUT/load.host.rc") (see $OUT/load.host.out)"
  local nic nicgrow
  read -r nic nicgrow < <(per_device "$b" "$a" rnic | head -1)
  if [ -z "$nic" ] || ! awk -v g="$nicgrow" 'BEGIN { exit !(g > 0) }'; then
    detail "no RDMA port moved a byte in the host window: DEVICE_CHECK_HOST_LOAD carried no traffic here"; return 2
  fi
  local dev=${nic%/*} addr root numa
  addr=$(readlink -f "$sysroot/class/infiniband/$dev/device" 2>/dev/null); addr=${addr##*/}
  root=$(pci_chain "$addr" | tail -1)
  numa=$(cat "$sysroot/bus/pci/devices/$addr/numa_node" 2>/dev/null)
  detail "the load's NIC: $nic, $nicgrow B in ${s} s, PCI $addr, root port ${root:-unknown}, NUMA node ${numa:-unknown}"
  local top topgrow line bus node
  read -r top topgrow < <(per_device "$b" "$a" cpu_pcie | head -1)
  [ -n "$top" ] || { detail "the collector serves no cpu_pcie series: MISMATCH"; return 1; }
  line=$(grep '^interconnect_io_bytes_total{' "$a" | grep 'component="cpu_pcie"' | grep "device=\"$top\"" | head -1)
  bus=$(label "$line" pci_bus_id); node=$(label "$line" numa_node)
  detail "the busiest cpu_pcie device: $top, $topgrow B (pci_bus_id '${bus}', numa_node ${node:-none}); the next: $(per_device "$b" "$a" cpu_pcie | sed -n 2p)"
  local rc=0
  if awk -v t="$topgrow" -v n="$nicgrow" 'BEGIN { exit !(t < 0.5 * n) }'; then
    detail "$top carried less than half the NIC's bytes: not the NIC's root port: MISMATCH"; rc=1
  fi
  if [ -n "$bus" ]; then
    if [ "$bus" = "$root" ]; then detail "$top is $root, the NIC's root port: ok"
    else detail "$top is served as $bus, the NIC's root port is ${root:-unknown}: MISMATCH"; rc=1; fi
  elif [ -n "$numa" ] && [ "$node" = "$numa" ]; then
    detail "$top is on the NIC's NUMA node $numa: ok; the collector names no PCI address for it: this load maps ${top##*/} to root port ${root:-unknown} ($nic)"
  else
    detail "$top is on NUMA node ${node:-none}, the NIC on ${numa:-unknown}: MISMATCH"; rc=1
  fi
  return $rc
}

# per_device BEFORE AFTER COMPONENT: "DEVICE GROWTH" per device of COMPONENT (both directions
# summed), the greatest growth first.
per_device() {
  awk -v comp="$3" '
    function lab(l, k,   r) { r = l; if (!sub(".*[{,]" k "=\"", "", r)) return ""; sub("\".*", "", r); return r }
    index($0, "interconnect_io_bytes_total{") == 1 && lab($0, "component") == comp {
      d = lab($0, "device"); if (FILENAME == ARGV[1]) v[d] -= $NF; else { v[d] += $NF; seen[d] = 1 }
    }
    END { for (d in seen) printf "%s %.17g\n", d, v[d] }' "$1" "$2" | sort -k2,2gr
}

# check_grace_gpudirect: in the gdr window of the load run (DEVICE_CHECK_GDR_LOAD, GPUDirect RDMA
# between a NIC and a GPU), the data goes NIC <-> root port <-> NVLink-C2C <-> GPU memory and never
# through the CPU's memory: the cpu_memory growth of the socketN/cmem devices, less the idle
# window's background over the same seconds, must stay below 10 % of the cpu_pcie growth (both
# directions: this node may be either end of ib_write_bw; all root ports), less its background.
# 10 %: what touches CPU memory is the work requests, completions and doorbell records, 64 B or so
# per message, a few % at 4 KB messages and far less at the 64 KB ib_write_bw sends by default; a
# load that bounces through host memory moves at least as much there as through the root ports.
# cpu_pcie must have carried the load (README: on GH200 GPUDirect crosses the Grace root ports).
check_grace_gpudirect() {
  if [ -z "${DEVICE_CHECK_GDR_LOAD:-}" ]; then
    detail "needs GPUDirect RDMA traffic to a peer, which this script cannot generate: set DEVICE_CHECK_GDR_LOAD"
    detail "to a command taking the seconds, e.g. 'ib_write_bw --use_cuda=0 -d mlx5_0 -D' with the peer's address"
    return 2
  fi
  load_ran || return
  local b a s ib ia is
  read -r b a s <<<"$(win gdr)"
  read -r ib ia is <<<"$(win idle)"
  [ "$(cat "$OUT/load.gdr.rc")" = 0 ] || { detail "DEVICE_CHECK_GDR_LOAD exited $(cat "$OUT/load.gdr.rc") (see $OUT/load.gdr.out, $OUT/load.gdr.err)"; return 1; }
  local mem pcie bmem bpcie
  if ! mem=$(grow "$b" "$a" cpu_memory "read write" "socket[0-9]+/cmem") || ! bmem=$(grow "$ib" "$ia" cpu_memory "read write" "socket[0-9]+/cmem"); then
    detail "the collector serves no cpu_memory of socketN/cmem: MISMATCH"; return 1
  fi
  if ! pcie=$(grow "$b" "$a" cpu_pcie "receive transmit" "socket[0-9]+/pcie(/port[0-9]+)?") || ! bpcie=$(grow "$ib" "$ia" cpu_pcie "receive transmit" "socket[0-9]+/pcie(/port[0-9]+)?"); then
    detail "the collector serves no cpu_pcie of socketN/pcie: MISMATCH"; return 1
  fi
  awk -v mem="$mem" -v pcie="$pcie" -v bmem="$bmem" -v bpcie="$bpcie" -v s="$s" -v is="$is" '
    BEGIN {
      m = mem - bmem / is * s; p = pcie - bpcie / is * s
      printf "  gdr window (%.1f s): cpu_memory %.4g B (background %.4g), cpu_pcie %.4g B (background %.4g)\n", s, mem, bmem / is * s, pcie, bpcie / is * s
      if (p <= 0) { print "  cpu_pcie carried nothing above its background during the GPUDirect load: MISMATCH"; exit 1 }
      ok = m <= 0.1 * p
      printf "  cpu_memory above background %.4g B, %.3g of cpu_pcie above background %.4g B (allowed 0.1): %s\n", m, m / p, p, (ok ? "ok" : "MISMATCH")
      exit !ok
    }'
}

# --- the AMD run: the gpu receiver on amdgpu's gpu_metrics across copies of known bytes ----------
# The collector runs its gpu receiver with source amdgpu (sysfs only, no ROCm library), scraped
# around a host<->device copy on GPU 0 and, where there are two GPUs, a GPU 0 -> GPU 1 copy, each
# DEVICE_CHECK_SECONDS long: $OUT/amd.{yaml,log,0.prom,host.prom,p2p.prom} and the copies' output
# $OUT/amd.{host,p2p}.out, or $OUT/amd.failed.
AMD_KIND=none
prepare_amd_load() {
  if [ -n "${DEVICE_CHECK_AMD_LOAD:-}" ]; then AMD_KIND=custom; return; fi
  if python3 -c 'import sys, torch; sys.exit(not (torch.version.hip and torch.cuda.is_available()))' >/dev/null 2>&1; then AMD_KIND=torch; fi
}
# amd_load MODE SECONDS FILE: host (GPU 0: "h2d_bytes d2h_bytes seconds") or p2p (GPU 0 -> GPU 1:
# "bytes seconds") into FILE.
amd_load() {
  case $AMD_KIND in
    custom) bash -c "$DEVICE_CHECK_AMD_LOAD \"\$1\" \"\$2\"" load "$1" "$2" ;;
    torch) if [ "$1" = host ]; then HIP_VISIBLE_DEVICES=0 python3 "$HERE/pcie_load.py" "$2"
           else HIP_VISIBLE_DEVICES=0,1 python3 "$HERE/pcie_load.py" "$2" p2p; fi ;;
  esac >"$3" 2>"$3.err"
  echo $? >"$3.rc"
}
run_amd() {
  local addr="127.0.0.1:$(free_port)"
  prepare_amd_load
  cat >"$OUT/amd.yaml" <<YAML
receivers:
  gpu:
    collection_interval: 1s
    root_path: $ROOT
    source: amdgpu
exporters:
  prometheus: {endpoint: $addr, without_scope_info: true}
service:
  pipelines:
    metrics: {receivers: [gpu], exporters: [prometheus]}
  telemetry: {metrics: {level: none}}
YAML
  if ! start_collector amd "$OUT/amd.yaml" "$addr" '^interconnect_io_bytes_total{component="gpu_' "$OUT/amd.0.prom"; then
    echo "no AMD GPU interconnect series served within ${READY_SECONDS}s (see $OUT/amd.log)" >"$OUT/amd.failed"
    return
  fi
  local pid=$COLLECTOR_PID
  sleep 2 # one more collection, and a PCIe rate (it needs two tables)
  scrape "$addr" >"$OUT/amd.0.prom" 2>/dev/null
  if [ "$AMD_KIND" != none ]; then
    say "AMD run: copies of ${SECONDS_PER_SOURCE}s ($AMD_KIND)"
    amd_load host "$SECONDS_PER_SOURCE" "$OUT/amd.host.out"
    sleep "$SETTLE"
    scrape "$addr" >"$OUT/amd.host.prom" 2>/dev/null
    if grep '^interconnect_io_bytes_total{component="gpu_xgmi"' "$OUT/amd.host.prom" | grep -q 'device="gpu1"'; then
      amd_load p2p "$SECONDS_PER_SOURCE" "$OUT/amd.p2p.out"
      sleep "$SETTLE"
      scrape "$addr" >"$OUT/amd.p2p.prom" 2>/dev/null
    fi
  fi
  kill -INT "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
}

# within WHAT BEFORE AFTER DRIVEN SECONDS: the growth BEFORE -> AFTER against DRIVEN bytes moved in
# SECONDS, with check_copy_bytes' tolerance (TOL_*).
within() {
  awk -v what="$1" -v b="$2" -v a="$3" -v d="$4" -v s="$5" -v lo=$TOL_LOW -v hi=$TOL_HIGH -v k=$TOL_SAMPLES_S '
    BEGIN {
      served = a - b; slack = k * d / s; min = lo * d - slack; max = hi * d + slack
      ok = d > 0 && served >= min && served <= max
      printf "  %s: served %.4g B, driven %.4g B (%.3g of it), allowed %.4g..%.4g B: %s\n",
        what, served, d, (d > 0 ? served / d : 0), min, max, (ok ? "ok" : "MISMATCH")
      exit !ok
    }'
}

# check_amd_gpu_metrics: what the collector derives from gpu_metrics against copies of known bytes:
#   - gpu_pcie direction=both of GPU 0 (pcie_bandwidth_acc over accumulation_counter, taken as GB/s
#     of 10^9 B, integrated over time) grows by the host copy's h2d + d2h bytes: what settles that
#     reading and its unit, and whether the figure holds both directions;
#   - gpu_xgmi transmit of GPU 0 and receive of GPU 1 (xgmi_write/read_data_acc, KB taken as 1024 B)
#     grow by the GPU 0 -> GPU 1 copy's bytes, where there are two GPUs.
# The tolerance is check_copy_bytes' (TOL_*). GPU 0 of the copies (HIP's device 0) is taken to be
# the collector's gpu0, the lowest PCI address: HIP orders the GPUs by PCI address too; the copy's
# own report of its device, where it gives one, is printed beside.
check_amd_gpu_metrics() {
  if [ -f "$OUT/amd.failed" ]; then detail "$(cat "$OUT/amd.failed")"; return 1; fi
  [ -f "$OUT/amd.0.prom" ] || { detail "the AMD run produced no scrape"; return 1; }
  if [ "$AMD_KIND" = none ]; then
    detail "no copy generator: install PyTorch built for ROCm (torch.version.hip set, torch.cuda.is_available()), or set DEVICE_CHECK_AMD_LOAD"
    return 2
  fi
  local bus rc=2 up down secs bytes b a
  bus=$(label "$(grep '^interconnect_io_bytes_total{' "$OUT/amd.0.prom" | grep 'device="gpu0"' | head -1)" pci_bus_id)
  if [ "$(cat "$OUT/amd.host.out.rc")" != 0 ] || ! read -r up down secs <"$OUT/amd.host.out"; then
    detail "the host copy failed or said nothing (see $OUT/amd.host.out.err)"; rc=1
  else
    local dev; dev=$(grep -o 'pci_bus_id=[^ ]*' "$OUT/amd.host.out.err" 2>/dev/null | head -1)
    detail "host copy on GPU 0 ($AMD_KIND; collector gpu0 is $bus): host->device $up B, device->host $down B in $secs s${dev:+ (the copy reports $dev)}"
    b=$(value "$OUT/amd.0.prom" interconnect_io_bytes_total component=gpu_pcie device=gpu0 direction=both)
    a=$(value "$OUT/amd.host.prom" interconnect_io_bytes_total component=gpu_pcie device=gpu0 direction=both)
    if [ -z "$b" ] || [ -z "$a" ]; then detail "gpu0 gpu_pcie both: not served (see $OUT/amd.log): MISMATCH"; rc=1
    elif within "gpu0 gpu_pcie both" "$b" "$a" "$(awk -v u="$up" -v d="$down" 'BEGIN { printf "%.0f", u + d }')" "$secs"; then [ $rc = 2 ] && rc=0
    else rc=1; fi
  fi
  if [ ! -f "$OUT/amd.p2p.out" ]; then
    detail "one AMD GPU: the XGMI copy needs two"
  elif [ "$(cat "$OUT/amd.p2p.out.rc")" != 0 ] || ! read -r bytes secs <"$OUT/amd.p2p.out"; then
    detail "the GPU 0 -> GPU 1 copy failed or said nothing (see $OUT/amd.p2p.out.err)"; rc=1
  else
    detail "copy GPU 0 -> GPU 1: $bytes B in $secs s"
    local g gpu dir
    for g in "gpu0 transmit" "gpu1 receive"; do
      read -r gpu dir <<<"$g"
      b=$(value "$OUT/amd.host.prom" interconnect_io_bytes_total component=gpu_xgmi device="$gpu" direction="$dir")
      a=$(value "$OUT/amd.p2p.prom" interconnect_io_bytes_total component=gpu_xgmi device="$gpu" direction="$dir")
      if [ -z "$b" ] || [ -z "$a" ]; then detail "$gpu gpu_xgmi $dir: not served: MISMATCH"; rc=1
      elif within "$gpu gpu_xgmi $dir" "$b" "$a" "$bytes" "$secs"; then [ $rc = 2 ] && rc=0
      else rc=1; fi
    done
  fi
  return $rc
}

# --- Broadcom RoCE: the host window's load against the port's own counters -----------------------
# bnxt_counters: "DEVICE/PORT TX_ROCE_ONLY_BYTES TX_BYTES" for each bnxt_re port ("-" for a file
# the port does not have).
bnxt_counters() {
  local d dev
  for d in "$sysroot"/class/infiniband/bnxt_re*/ports/*/hw_counters; do
    [ -d "$d" ] || continue
    dev=${d%/hw_counters}; dev="$(basename "${dev%/ports/*}")/${dev##*/}"
    echo "$dev $(cat "$d/tx_roce_only_bytes" 2>/dev/null || echo -) $(cat "$d/tx_bytes" 2>/dev/null || echo -)"
  done
}

# check_bnxt_roce: over the host window (DEVICE_CHECK_HOST_LOAD: RoCE traffic through a bnxt_re
# port), the growth of each bnxt_re port's interconnect_io rnic transmit against its hw_counters
# read beside the two scrapes: tx_roce_only_bytes where it moved (a PF with extended stats, whose
# RoCE bytes the receiver reads), else tx_bytes (a VF, or a PF that does not fill them). Within
# 2 %: both scrapes follow the counters settled (idle before the load, and two collections after
# it), so what differs is other traffic on the port in the moments between a file read and the
# collector's; the check assumes the port carries the load alone. Skipped, naming the variable,
# without a load.
check_bnxt_roce() {
  present "$sysroot/class/infiniband/bnxt_re*" || { detail "no bnxt_re device"; return 2; }
  if [ -z "${DEVICE_CHECK_HOST_LOAD:-}" ]; then
    detail "needs RoCE traffic through a bnxt_re port to a peer, which this script cannot generate: set DEVICE_CHECK_HOST_LOAD"
    detail "to a command taking the seconds, e.g. 'ib_write_bw -d bnxt_re0 -D' with the peer's address"
    return 2
  fi
  host_ran || return
  local dev r0 t0 r1 t1 b a n=0 rc=0
  while read -r dev r0 t0; do
    read -r _ r1 t1 < <(awk -v d="$dev" '$1 == d' "$OUT/host.bnxt.after")
    b=$(value "$OUT/host.before" interconnect_io_bytes_total component=rnic device="$dev" direction=transmit)
    a=$(value "$OUT/host.after" interconnect_io_bytes_total component=rnic device="$dev" direction=transmit)
    if [ "$t0" = - ] || [ "$t1" = - ] || [ "$t1" = "$t0" ]; then detail "$dev: tx_bytes did not move: no traffic in the window"; continue; fi
    if [ -z "$a" ] || [ -z "$b" ]; then detail "$dev: no interconnect_io rnic transmit served: MISMATCH"; rc=1; continue; fi
    n=$((n + 1))
    awk -v dev="$dev" -v r0="$r0" -v r1="$r1" -v t0="$t0" -v t1="$t1" -v b="$b" -v a="$a" '
      BEGIN {
        served = a - b; tx = t1 - t0; roce = (r0 == "-" || r1 == "-") ? 0 : r1 - r0
        if (roce > 0) { want = roce; what = "tx_roce_only_bytes" }
        else { want = tx; what = "tx_bytes (tx_roce_only_bytes did not move: a VF, or a PF without extended stats)" }
        d = served - want; if (d < 0) d = -d
        ok = d <= 0.02 * want
        printf "  %s: served +%.0f B, %s +%.0f B (tx_bytes +%.0f B): %s\n", dev, served, what, want, tx, (ok ? "ok" : "MISMATCH")
        exit !ok
      }' || rc=1
  done <"$OUT/host.bnxt.before"
  [ $n -gt 0 ] || { detail "no bnxt_re port carried the load"; return 2; }
  return $rc
}
# --- checks that need a peer or a job: instructions where the hardware is ---------------------------
# check_mi300x_gpudirect stays an instruction: its verdict is whether perftest's GPUDirect run on
# a given GPU and its PIX NIC succeeds, a pairing a load command of the user's own would have to
# declare, and no counter the collector serves says whether the bytes went to GPU memory.
check_mi300x_gpudirect() {
  present "$sysroot/class/drm/card*/device/gpu_metrics" || { detail "no AMD GPU"; return 2; }
  detail "needs an RDMA peer (not automated): where rnic_topology_gpudirect_ready{gpu_pci_bus_id=<MI300X>} is 1,"
  detail "ib_write_bw --use_rocm=<gpu> -d <its PIX NIC> <peer> must run"
  return 2
}
# check_nvlink_per_link SOURCE: over the traffic window, the bytes of a GPU's links
# (gpu.nvlink.link.io, summed over link) against its interconnect.io gpu_nvlink, per direction.
# Through DCGM they are independent fields (the per-link DCGM_FI_PROF_NVLINK_L<n>_TX/RX_BYTES and
# the aggregate 1011/1012), through NVML the per-link counters 138/139 (or 202/204) and the GPU's
# own NVLink total. Both are read at the same two scrapes, so no window edge is missed as with the
# driven traffic: allowed 5 % plus one sample (1 s) of the window's rate, where the two fields'
# newest samples straddle a scrape. Skipped,
# saying so, where no link series is served (no NVLink, or a source without per-link fields) or
# no NVLink byte moved in the window (the default traffic is host<->device only: an NVLink load,
# nccl-tests' all_reduce_perf across the GPUs, as DEVICE_CHECK_LOAD).
check_nvlink_per_link() {
  local src=$1
  ran "$src" || return
  local before="$OUT/$src.before" after="$OUT/$src.after" gpus g dir rc=0 moved=0 secs
  gpus=$(grep -o '^gpu_nvlink_link_io_bytes_total{[^}]*' "$after" | sed -n 's/.*[{,]device="\([^"]*\)".*/\1/p' | sort -u)
  if [ -z "$gpus" ]; then
    detail "no per-link series served (gpu.nvlink.link.io): no GPU with NVLink, or $src has no per-link fields here"
    return 2
  fi
  read -r _ _ secs <"$OUT/$src.load" 2>/dev/null
  secs=$(( ${secs:-$SECONDS_PER_SOURCE} + SETTLE ))
  for g in $gpus; do
    for dir in transmit receive; do
      local lb la gb ga
      lb=$(sum_of "$before" gpu_nvlink_link_io_bytes_total device="$g" direction=$dir)
      la=$(sum_of "$after" gpu_nvlink_link_io_bytes_total device="$g" direction=$dir)
      gb=$(value "$before" interconnect_io_bytes_total component=gpu_nvlink device="$g" direction=$dir)
      ga=$(value "$after" interconnect_io_bytes_total component=gpu_nvlink device="$g" direction=$dir)
      if [ -z "$la" ] || [ -z "$ga" ] || [ -z "$lb" ] || [ -z "$gb" ]; then
        detail "$g $dir: links ${la:-not served}, gpu_nvlink ${ga:-not served}: MISMATCH"; rc=1; continue
      fi
      awk -v lb="$lb" -v la="$la" -v gb="$gb" -v ga="$ga" -v s="$secs" -v k=1 -v g="$g" -v dir=$dir '
        BEGIN {
          links = la - lb; agg = ga - gb
          if (links == 0 && agg == 0) { printf "  %s %s: no NVLink bytes in the window\n", g, dir; exit 2 }
          d = links - agg; if (d < 0) d = -d
          tol = 0.05 * agg + k * agg / s
          ok = d <= tol
          printf "  %s %s: links %.4g B, gpu_nvlink %.4g B, differ by %.4g B (allowed %.4g): %s\n",
            g, dir, links, agg, d, tol, (ok ? "ok" : "MISMATCH")
          exit !ok
        }'
      case $? in 0) moved=1 ;; 2) ;; *) moved=1; rc=1 ;; esac
    done
  done
  if [ $moved -eq 0 ]; then
    detail "no NVLink traffic in the window: run an NVLink load as DEVICE_CHECK_LOAD (nccl-tests all_reduce_perf -g <GPUs>)"
    detail "and nvidia-smi nvlink -gt d beside it shows the same links moving"
    return 2
  fi
  return $rc
}
# check_link_health: the link-health fields of each GPU (NVLink5 error counters 1204-1219 but
# 1211, 1215, 1217; the decoded BER ratios 1216, 1218; the C2C error counters 1400-1402) as the
# DCGM run served them, against dcgmi dmon's reads of the same fields around it (run_source):
#   - a counter is served as its growth since the collector's first reading (a counter series
#     starts at 0), which lies between two dmon reads: at least dmon2 - dmon1 (both taken after the
#     first reading and before the last one) and at most dmon3 - dmon0 (taken before the first and
#     after the last). A counter may grow between any two reads, so these are bounds, not an
#     equality; on a healthy link every read is the same and the served growth must be 0;
#   - a bit error rate is served as the latest ratio: it must be within dmon's last two reads,
#     widened by 0.0005, as dmon prints doubles with three decimals (it cannot tell 1e-9 from 0:
#     this part only catches a gross misreading, such as the raw encodings 1215/1217);
#   - a field dmon reads N/A (blank, or NOT_SUPPORTED: every NVLink4 GPU, every GPU without C2C)
#     must not be served, and a GPU that serves none of them must have said nothing about them in
#     the log; one dmon reads must be served.
# An H100 node serves none of these series: it passes where dmon reads N/A everywhere and the log
# says nothing of them. Skipped without dcgmi, or without the DCGM run.
check_link_health() {
  case " $SOURCES " in *" dcgm "*) ;; *) detail "DEVICE_CHECK_SOURCES ($SOURCES) has no dcgm: these fields are read through DCGM only"; return 2 ;; esac
  ran dcgm || return
  command -v dcgmi >/dev/null 2>&1 || { detail "no dcgmi on PATH (DCGM's CLI, beside nv-hostengine): nothing to compare with"; return 2; }
  if ! grep -q '^GPU [0-9]' "$OUT/dcgm.dmon3" 2>/dev/null; then
    detail "dcgmi dmon -e $HEALTH_IDS -c 1 printed no GPU row: $(head -c 300 "$OUT/dcgm.dmon3.err" "$OUT/dcgm.dmon3" 2>/dev/null | tr '\n' ' ')"
    return 2
  fi
  detail "dcgmi dmon -e $HEALTH_IDS -c 1, read 4 times (before the collector, after its first scrape, before and after its last)"
  local rc none g pat
  none=$(awk -v fields="$HEALTH_FIELDS" '
    function dev(l,   r) { r = l; if (!sub(/.*[{,]device="/, "", r)) return ""; sub(/".*/, "", r); return r }
    function num(v) { return v ~ /^-?[0-9.]+([eE][-+]?[0-9]+)?$/ }
    BEGIN { n = split(fields, L, "\n"); for (i = 1; i <= n; i++) { split(L[i], f, " "); id[i] = f[1]; met[i] = f[2]; lab[i] = f[3]; kind[i] = f[4] } }
    FILENAME ~ /dmon[0-3]$/ {
      k = substr(FILENAME, length(FILENAME))
      if ($1 == "GPU" && $2 ~ /^[0-9]+$/) { g = "gpu" $2; gpu[g] = 1; for (i = 1; i <= n; i++) dm[k, g, i] = (i + 2 <= NF ? $(i + 2) : "N/A") }
      next
    }
    {
      for (i = 1; i <= n; i++) if (index($0, met[i] "{") == 1 && index($0, lab[i] "=\"" kind[i] "\"")) {
        g = dev($0); gpu[g] = 1
        if (FILENAME ~ /after$/) { sa[g, i] = $NF; has[g] = 1 } else sb[g, i] = $NF
      }
    }
    END {
      bad = 0
      for (x = 0; x < 1024; x++) {
        g = "gpu" x; if (!(g in gpu)) continue
        vals = ""
        for (i = 1; i <= n; i++) if (num(dm[3, g, i])) vals = vals " " id[i]
        if (!has[g]) {
          if (vals == "") { printf "  %s: dcgmi N/A for every field, none served\n", g; print g > "/dev/stderr"; continue }
          printf "  %s: dcgmi reads%s, the collector serves none: MISMATCH\n", g, vals; bad = 1; continue
        }
        for (i = 1; i <= n; i++) {
          d0 = dm[0, g, i]; d1 = dm[1, g, i]; d2 = dm[2, g, i]; d3 = dm[3, g, i]; served = ((g, i) in sa)
          what = sprintf("%s %s %s", g, id[i], kind[i])
          reads = sprintf("dcgmi %s, %s, %s, %s", d0, d1, d2, d3)
          if (d3 ~ /\.\.\.$/) { printf "  %s: dcgmi cut its value (%s): not compared\n", what, d3; continue }
          if (!num(d3)) {
            if (served) { printf "  %s: served %s, dcgmi %s: MISMATCH\n", what, sa[g, i], d3; bad = 1 }
            continue
          }
          if (!served) { printf "  %s: not served, %s: MISMATCH\n", what, reads; bad = 1; continue }
          v = sa[g, i] + 0
          if (met[i] ~ /ratio$/) {
            lo = d3 + 0; hi = d3 + 0
            if (num(d2)) { if (d2 + 0 < lo) lo = d2 + 0; if (d2 + 0 > hi) hi = d2 + 0 }
            lo -= 0.0005; hi += 0.0005
            ok = v >= lo && v <= hi
            printf "  %s: served %.6g, %s: allowed %.4f..%.4f: %s\n", what, v, reads, lo, hi, (ok ? "ok" : "MISMATCH")
          } else {
            lo = (num(d1) && num(d2) && ((g, i) in sb)) ? d2 - d1 : 0
            hi = num(d0) ? d3 - d0 : -1
            ok = v >= lo && (hi < 0 || v <= hi)
            printf "  %s: served +%.0f, %s: growth allowed %.0f..%s: %s\n", what, v, reads, lo, (hi < 0 ? "any" : sprintf("%.0f", hi)), (ok ? "ok" : "MISMATCH")
          }
          if (!ok) bad = 1
        }
      }
      exit bad
    }' "$OUT"/dcgm.dmon[0-3] "$OUT/dcgm.before" "$OUT/dcgm.after" 2>"$OUT/dcgm.health.none")
  rc=$?
  printf '%s\n' "$none"
  # What a GPU without these fields must not have said: its keys (gpuN/nvlink_errors, ...) and,
  # where no GPU has them, any word of them.
  pat='gpu\.nvlink\.errors|gpu\.nvlink\.bit_error_rate|gpu\.c2c\.errors|nvlink_errors|nvlink_ber|c2c_errors'
  if ! grep -qE '^gpu_(nvlink_errors_total|nvlink_bit_error_rate_ratio|c2c_errors_total)\{' "$OUT/dcgm.after"; then
    if grep -E "$pat" "$OUT/dcgm.log" >"$OUT/dcgm.health.log"; then
      detail "no GPU has these fields, yet the log speaks of them: MISMATCH"; sed 's/^/    /' "$OUT/dcgm.health.log" | head -5; rc=1
    else detail "no GPU has these fields: none served, nothing said about them in $OUT/dcgm.log"; fi
  else
    while read -r g; do
      [ -n "$g" ] || continue
      if grep -E "\"$g/(nvlink_errors|nvlink_ber|c2c_errors)\"" "$OUT/dcgm.log" >"$OUT/dcgm.health.log"; then
        detail "$g has none of these fields, yet the log speaks of them: MISMATCH"; sed 's/^/    /' "$OUT/dcgm.health.log" | head -5; rc=1
      fi
    done <"$OUT/dcgm.health.none"
  fi
  return $rc
}
check_nccl() {
  detail "needs an NCCL job (not automated): run a 2.28+/2.30+ job with the inspector plugin dumping into the ncclreceiver's"
  detail "directory; every dump must be read with outcome=accepted only, header.id equal to RAS's hash for the communicator,"
  detail "and each rank's pci.bus_id that of nvidia-smi --query-gpu=pci.bus_id for its device; the records' coll_timing_source"
  detail "must be kernel_gpu (the diagnosis connector's straggler verdict assumes GPU kernel timing; a CPU-timed record inverts it)"
  return 2
}

if [ -z "$GPU_SKIP" ]; then
  prepare_load
  say "traffic generator: $LOAD_KIND"

  HE_PID=
  for src in $SOURCES; do
    case $src in
      nvml) run_source nvml "    source: nvml" ;;
      dcgm)
        if pgrep -x nv-hostengine >/dev/null 2>&1; then :
        elif command -v nv-hostengine >/dev/null 2>&1; then
          nv-hostengine -n -b 127.0.0.1 -p 5555 >"$OUT/nv-hostengine.log" 2>&1 &
          HE_PID=$!
          sleep 3
        else
          echo "no nv-hostengine on this machine: DCGM not checked" >"$OUT/dcgm.skip"
          continue
        fi
        run_source dcgm "    source: dcgm
    dcgm: {mode: standalone, endpoint: 127.0.0.1:5555, sample_interval: 1s}" "$HEALTH_METRICS"
        [ -n "$HE_PID" ] && { kill "$HE_PID" 2>/dev/null; wait "$HE_PID" 2>/dev/null; } ;;
      *) say "unknown source $src in DEVICE_CHECK_SOURCES"; exit 1 ;;
    esac
  done

  say "nvidia-smi topo -m:"
  sed 's/^/  /' "$OUT/topo.txt"
fi
# The host runs: the rnic and cpuuncore receivers where their hardware is (not for an AMD GPU
# alone), the load run where a Grace or Xeon Max PMU is, the AMD run where a gpu_metrics table is.
if [ -z "$RDMA_SKIP" ] || [ -z "$SCF_SKIP" ] || [ -z "$HBM_SKIP" ]; then run_host; fi
if [ -z "$SCF_SKIP" ] || [ -z "$HBM_SKIP" ]; then run_load; fi
[ -z "$AMD_SKIP" ] && run_amd

# The list of checks: one line each.
if [ -z "$GPU_SKIP" ]; then
  for src in $SOURCES; do
    check "gpu_pcie_bytes_$src" check_copy_bytes gpu_pcie "$src"
    check "gpu_c2c_bytes_$src" check_copy_bytes gpu_c2c "$src"
    check "gpu_bus_ids_$src" check_bus_ids "$src"
    check "gpu_numa_$src" check_numa "$src"
    check "gpu_nvlink_per_link_$src" check_nvlink_per_link "$src"
  done
  check gpu_nic_pcie_path check_nic_paths
  check gpu_burst_cost check_gpu_bursts
else
  for c in gpu_pcie_bytes gpu_c2c_bytes gpu_bus_ids gpu_numa gpu_nvlink_per_link gpu_nic_pcie_path gpu_burst_cost; do check "$c" skipped "$GPU_SKIP"; done
fi
check rnic_driver_names host_check "$RDMA_SKIP" check_driver_names
check rnic_link_vs_lspci host_check "$RDMA_SKIP" check_link_lspci
check rnic_efa_operation_bytes host_check "$RDMA_SKIP" check_efa_operations
check rnic_multiplane_parents host_check "$RDMA_SKIP" check_planes
check rnic_burst_read_cost host_check "$RDMA_SKIP" check_burst_read_cost
check rnic_bnxt_roce_only_bytes host_check "$RDMA_SKIP" check_bnxt_roce
check rnic_irdma_retrans_name host_check "$RDMA_SKIP" check_irdma_retrans
check rnic_mi300x_gpudirect host_check "$RDMA_SKIP" check_mi300x_gpudirect
check cpuuncore_grace_cmem_bytes host_check "$SCF_SKIP" check_grace_cmem
check cpuuncore_grace_root_port host_check "$SCF_SKIP" check_grace_root_port
check cpuuncore_grace_gpudirect host_check "$SCF_SKIP" check_grace_gpudirect
check cpuuncore_xeonmax_hbm_bytes host_check "$HBM_SKIP" check_hbm_bytes
check cpuuncore_burst_cost host_check "$UNCORE_SKIP" check_uncore_bursts
check gpu_amd_xgmi_pcie_bandwidth host_check "$AMD_SKIP" check_amd_gpu_metrics
check gpu_link_health host_check "$GPU_SKIP" check_link_health
check nccl_inspector_fields host_check "$GPU_SKIP" check_nccl
say "files kept in $OUT"
if [ $FAILED -ne 0 ]; then
  say "some checks failed"
  exit 1
fi
say "every check passed or was skipped"
