package otelcoliclens_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakedcgm"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

func deviceCheckScript(t *testing.T) string {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("..", "..", ".ci", "device-check", "device-check.sh"))
	require.NoError(t, err)
	return script
}

// TestDeviceCheckWithoutGPU runs `make device-check`'s script as it runs on a machine without an
// NVIDIA GPU (no nvidia-smi on PATH) and without the host group's hardware (nothing under
// DEVICE_CHECK_ROOT): it must say so and succeed, so that the same command can be run on every
// machine.
func TestDeviceCheckWithoutGPU(t *testing.T) {
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		t.Skip("this machine has nvidia-smi: run `make device-check` instead")
	}
	root := t.TempDir()
	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = []string{"PATH=/usr/bin:/bin", "ICLENS_COLLECTOR=/nonexistent", "DEVICE_CHECK_ROOT=" + root}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "device-check: no NVIDIA GPU found (no nvidia-smi on PATH): GPU checks skipped\n"+
		"device-check: no RDMA device, Grace SCF PMU, Xeon Max HBM PMU or AMD gpu_metrics under "+root+"/sys: host checks skipped\n"+
		"device-check: root_path "+root+" is not /: perf_event_open reads the running kernel's PMUs: uncore checks skipped\n"+
		"device-check: nothing to check on this machine\n", string(out))
}

// deviceCheckNode is the stand-in machine of the device check's own test: two GPUs at the PCI
// addresses the fake libdcgm.so.4 reports (00000000:1B:00.0, 00000000:3B:00.0; fakedcgm.c), each
// with a ConnectX-7 behind the same PCIe switch, one pair per host bridge and NUMA node, laid out
// by testfs.WritePCINode as drivers/pci/pci-sysfs.c lays sysfs out. nvidia-smi topo -m shows such
// a node as GPU-NIC pairs at PIX and everything across the sockets at SYS (DGX H100 user guide).
func deviceCheckNode() testfs.PCINode {
	pair := func(bus int, nic string, group int) testfs.PCIFunction {
		a := func(b, d int) string { return fmt.Sprintf("0000:%02x:%02x.0", b, d) }
		bridge := func(addr string, children ...testfs.PCIFunction) testfs.PCIFunction {
			return testfs.PCIFunction{Address: addr, Vendor: 0x1000, DevID: 0xc030, Class: 0x060400, IOMMUGroup: -1, Children: children}
		}
		root := bridge(a(bus, 1), bridge(a(bus+1, 0),
			bridge(a(bus+2, 0), testfs.PCIFunction{Address: a(bus+3, 0), Vendor: 0x10de, DevID: 0x2330, Class: 0x030200, IOMMUGroup: group,
				Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16}),
			bridge(a(bus+2, 1), testfs.PCIFunction{Address: a(bus+4, 0), Vendor: 0x15b3, DevID: 0x1021, Class: 0x020700, IOMMUGroup: group + 1,
				RDMA: nic, Speed: 32, MaxSpeed: 32, Width: 16, MaxWidth: 16})))
		root.Vendor, root.DevID = 0x8086, 0x352a // a Sapphire Rapids root port
		return root
	}
	return testfs.PCINode{
		IOMMUGroupType: map[int]string{10: "identity", 11: "identity", 30: "identity", 31: "identity"},
		RootBuses: []testfs.PCIRootBus{
			{Name: "pci0000:18", NUMANode: 0, RootPorts: []testfs.PCIFunction{pair(0x18, "mlx5_0", 10)}},
			{Name: "pci0000:38", NUMANode: 1, RootPorts: []testfs.PCIFunction{pair(0x38, "mlx5_1", 30)}},
		},
		Modules:       []string{"nvidia_peermem", "mlx5_core", "mlx5_ib"},
		NVIDIAVersion: "570.124.06",
	}
}

// topoMatrix is `nvidia-smi topo -m` as the driver prints it (tab-separated, " X " on the
// diagonal, the header underlined with ANSI escapes, the NIC legend after the matrix), with the
// given GPU-NIC cells (GPU0-NIC0, GPU0-NIC1, GPU1-NIC0, GPU1-NIC1) and NUMA affinities.
func topoMatrix(cells [4]string, numa [2]string) string {
	return "\x1b[4m\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n" +
		fmt.Sprintf("GPU0\t X \tNV18\t%s\t%s\t0-55,112-167\t%s\t\tN/A\n", cells[0], cells[1], numa[0]) +
		fmt.Sprintf("GPU1\tNV18\t X \t%s\t%s\t56-111,168-223\t%s\t\tN/A\n", cells[2], cells[3], numa[1]) +
		fmt.Sprintf("NIC0\t%s\t%s\t X \tSYS\t\t\t\t\n", cells[0], cells[2]) +
		fmt.Sprintf("NIC1\t%s\t%s\tSYS\t X \t\t\t\t\n", cells[1], cells[3]) +
		"\nLegend:\n\n  X    = Self\n  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)\n" +
		"  PIX  = Connection traversing at most a single PCIe bridge\n  NV#  = Connection traversing a bonded set of # NVLinks\n" +
		"\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_1\n\n"
}

// dcgmiStub stands in for dcgmi: `--version`, and `dmon -e <ids> -c 1` printing a table as
// dcgmi/DeviceMonitor.cpp lays it out (a #Entity header, a unit line, "GPU <id>" rows, N/A for a
// blank or unsupported value, doubles with three decimals) of the link-health fields the fake
// libdcgm.so.4 serves (fakedcgm.c, FAKE_DCGM_NVLINK5): on GPU 0 the NVLink5 counters 10 x field +
// 5 per read of the collector, the BER ratios 2.5e-9 and 1e-15 (0.000 at three decimals), the C2C
// counters 7, one per read, and 1; on GPU 1 (an H100) and without the knob, N/A everywhere. The
// stub cannot see the collector's reads, so it brackets them, numbering its own calls as the
// device check makes them (before the collector, after its first scrape, before and after its
// last): none before the fourth call, at most 100000 at it. FAKE_DCGMI_WRONG=1 makes dcgmi
// disagree three ways: GPU 0's C2C CRC counter 1400 reads 9 from the third call on (it grew by 2
// while the collector ran), its 1402 reads N/A (a field the collector serves), and GPU 1 reads
// GPU 0's values (fields the collector, on the fake's H100, serves none of).
const dcgmiStub = `#!/bin/sh
case "$1" in
  --version) echo "Version : 4.6.0"; exit 0 ;;
  dmon) ;;
  *) exit 1 ;;
esac
ids=
while [ $# -gt 0 ]; do [ "$1" = -e ] && ids=$2; shift; done
state="$(dirname "$0")/dmon.calls"
call=$(( $(cat "$state" 2>/dev/null || echo 0) + 1 ))
echo $call >"$state"
reads=0; [ $call -ge 4 ] && reads=100000
printf '%-10s' '#Entity'; for f in $(echo "$ids" | tr , ' '); do printf '%-14s' "F$f"; done; echo
printf '%-10s\n' ID
wrong=${FAKE_DCGMI_WRONG:-0}
for g in 0 1; do
  printf '%-10s' "GPU $g"
  for f in $(echo "$ids" | tr , ' '); do
    v=N/A
    if [ "${FAKE_DCGM_NVLINK5:-0}" = 1 ] && { [ "$g" = 0 ] || [ "$wrong" = 1 ]; }; then
      case $f in
        1216|1218) v=0.000 ;;
        1400) v=7; [ "$wrong" = 1 ] && [ $call -ge 3 ] && v=9 ;;
        1401) v=$reads ;;
        1402) v=1; [ "$wrong" = 1 ] && [ "$g" = 0 ] && v=N/A ;;
        *) v=$((10 * f + 5 * reads)) ;;
      esac
    fi
    printf '%-14s' "$v"
  done
  echo
done
`

// runDeviceCheck runs the device check against the built collector on the fake libdcgm.so.4 in
// its Hopper, wall-clock mode (GPU 0 transmits 1000 B/s and receives 2000 B/s; fakedcgm.c), with
// stand-ins for what a GPU machine has: nvidia-smi printing topo, a host engine that only has to
// run, dcgmi (dcgmiStub), and a traffic generator that says it drove h2d and d2h bytes per second
// for its seconds.
func runDeviceCheck(t *testing.T, topo string, h2d, d2h int, env ...string) (string, error) {
	t.Helper()
	bin := collectorBinary(t)
	libDir := fakedcgm.Build(t)
	root := t.TempDir()
	testfs.WritePCINode(t, root, deviceCheckNode())

	fakes := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(fakes, name), []byte(body), 0o755))
	}
	require.NoError(t, os.WriteFile(filepath.Join(fakes, "topo.txt"), []byte(topo), 0o644))
	write("nvidia-smi", `#!/bin/sh
case "$*" in
  -L) printf 'GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-0)\nGPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-fake-1)\n' ;;
  "topo -m") cat "$(dirname "$0")/topo.txt" ;;
  *--query-gpu=index,pci.bus_id*) printf '0, 00000000:1B:00.0\n1, 00000000:3B:00.0\n' ;;
  *--query-gpu=*) printf 'index, name, pci.bus_id\n0, NVIDIA H100 80GB HBM3, 00000000:1B:00.0\n1, NVIDIA H100 80GB HBM3, 00000000:3B:00.0\n' ;;
esac
`)
	write("nv-hostengine", "#!/bin/sh\nexec sleep 300\n")
	write("dcgmi", dcgmiStub)
	// The host group's tools see none of this node's functions: its checks SKIP, whatever this
	// machine has.
	for _, tool := range []string{"ethtool", "lspci", "rdma"} {
		write(tool, "#!/bin/sh\nexit 1\n")
	}
	write("pcie-load", fmt.Sprintf("#!/bin/sh\nsleep \"$1\"\necho $((%d * $1)) $((%d * $1)) \"$1\"\n", h2d, d2h))

	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+fakes+":"+os.Getenv("PATH"),
		"ICLENS_COLLECTOR="+bin,
		"LD_LIBRARY_PATH="+libDir, "FAKE_DCGM_HOPPER=1", "FAKE_DCGM_REALTIME=1",
		"DEVICE_CHECK_SOURCES=dcgm",
		"DEVICE_CHECK_LOAD="+filepath.Join(fakes, "pcie-load"),
		// Eight seconds of traffic: the tolerance's two samples of slack are a quarter of it.
		"DEVICE_CHECK_SECONDS=8",
		// The fake's traffic never stops, so the last scrape follows the traffic at once.
		"DEVICE_CHECK_SETTLE=0",
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

var dgxTopo = [4]string{"PIX", "SYS", "SYS", "PIX"}

// TestDeviceCheckPasses: where the collector serves what was driven and what nvidia-smi says,
// and a GPU's links add up to its NVLink total (the fake's 16 links at 62.5 MB/s each way, the
// aggregate 1e9 B/s), every check passes and the script exits 0.
func TestDeviceCheckPasses(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runDeviceCheck(t, topoMatrix(dgxTopo, [2]string{"0", "1"}), 2000, 1000)
	require.NoError(t, err)
	for _, c := range []string{"gpu_pcie_bytes_dcgm", "gpu_bus_ids_dcgm", "gpu_numa_dcgm", "gpu_nvlink_per_link_dcgm", "gpu_nic_pcie_path"} {
		assert.Contains(t, out, "device-check: PASS "+c+"\n")
	}
	assert.NotContains(t, out, "FAIL")
	assert.Regexp(t, `gpu0 transmit: links [0-9.e+]+ B, gpu_nvlink [0-9.e+]+ B, differ by [0-9.e+]+ B \(allowed [0-9.e+]+\): ok`, out)
	assert.Contains(t, out, "device-check: SKIP gpu_c2c_bytes_dcgm\n  GPU 0 (0000:1b:00.0) serves no gpu_c2c series: not a Grace GPU\n", "an H100: its copies cross PCIe")
	assert.Contains(t, out, "gpu_pcie transmit: served")
	assert.Contains(t, out, "GPU0 (0000:1b:00.0) - NIC0 (mlx5_0): PIX")
	assert.Contains(t, out, "GPU1 (0000:3b:00.0) - NIC0 (mlx5_0): SYS")
	// Two H100s: DCGM and dcgmi have no link-health field on either, and the collector serves and
	// says nothing of them.
	assert.Contains(t, out, "device-check: PASS gpu_link_health\n")
	assert.Contains(t, out, "  gpu1: dcgmi N/A for every field, none served\n")
	assert.Contains(t, out, "  no GPU has these fields: none served, nothing said about them in ")
}

// TestDeviceCheckFails: a generator that moved three times what the collector served, a node
// whose nvidia-smi puts GPU 1's NIC on the other socket and GPU 1 on NUMA node 0, links that
// carry 20 % less than their GPU's NVLink total (FAKE_DCGM_LINKS_SHORT), and a dcgmi that
// disagrees with the NVLink5 fake (FAKE_DCGMI_WRONG: GPU 0's C2C CRC errors grew by 2 while the
// collector served no growth, its 1402 reads N/A though served, and GPU 1, which serves none, has
// values): the traffic, topology, NUMA, per-link and link-health checks fail, naming the pair,
// GPU or field, and the script exits 1.
func TestDeviceCheckFails(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runDeviceCheck(t, topoMatrix([4]string{"PIX", "SYS", "PIX", "SYS"}, [2]string{"0", "0"}), 6000, 3000,
		"FAKE_DCGM_LINKS_SHORT=1", "FAKE_DCGM_NVLINK5=1", "FAKE_DCGMI_WRONG=1")
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	for _, c := range []string{"gpu_pcie_bytes_dcgm", "gpu_numa_dcgm", "gpu_nvlink_per_link_dcgm", "gpu_nic_pcie_path", "gpu_link_health"} {
		assert.Contains(t, out, "device-check: FAIL "+c+"\n")
	}
	assert.Contains(t, out, "  gpu0 1400 crc: served +0, dcgmi 7, 7, 9, 9: growth allowed 2..2: MISMATCH\n")
	assert.Contains(t, out, "  gpu0 1402 replay_back_to_back: served 0, dcgmi N/A: MISMATCH\n")
	assert.Contains(t, out, "  gpu1: dcgmi reads 1204 1205 1206 1207 1208 1209 1210 1213 1212 1214 1219 1216 1218 1400 1401 1402, the collector serves none: MISMATCH\n")
	assert.Len(t, regexp.MustCompile(`(?m)^  gpu[01](: dcgmi| 1[24]\d\d ).*MISMATCH$`).FindAllString(out, -1), 3, "the other fields agree")
	assert.Regexp(t, `gpu1 receive: links [0-9.e+]+ B, gpu_nvlink [0-9.e+]+ B, differ by [0-9.e+]+ B \(allowed [0-9.e+]+\): MISMATCH`, out)
	assert.Contains(t, out, "device-check: PASS gpu_bus_ids_dcgm\n")
	assert.Contains(t, out, "GPU1 (0000:3b:00.0) - NIC0 (mlx5_0): topo -m PIX, collector SYS: MISMATCH")
	assert.Contains(t, out, "GPU1 (0000:3b:00.0): topo -m NUMA 0, collector 1: MISMATCH")
	assert.Equal(t, 2, strings.Count(out, " B: MISMATCH\n"), "both directions are off")
}

// TestDeviceCheckGraceHopperC2C: on a GH200 (the fake's GPU 0 with its C2C link, FAKE_DCGM_GH200)
// the host copies cross NVLink-C2C, so gpu_c2c is compared with what was driven and passes, and
// gpu_pcie SKIPs saying why; GPU 0 of an H100 node (TestDeviceCheckPasses) is the other way round.
func TestDeviceCheckGraceHopperC2C(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runDeviceCheck(t, topoMatrix(dgxTopo, [2]string{"0", "1"}), 2000, 1000, "FAKE_DCGM_GH200=1")
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS gpu_c2c_bytes_dcgm\n")
	assert.Contains(t, out, "  gpu_c2c transmit: served")
	assert.Contains(t, out, "device-check: SKIP gpu_pcie_bytes_dcgm\n  GPU 0 (0000:1b:00.0) has a C2C link: its host copies cross it, see gpu_c2c_bytes_dcgm\n")
	assert.NotContains(t, out, "FAIL")
}

// rdmaCheckNode is the host group's stand-in machine, without GPUs: mlx5_0 (0000:1b:00.0, netdev
// ens1f0np0) behind a PCIe switch on root port 0000:18:01.0, and mlx5_1 (0000:39:00.0, netdev
// ens2f0np0) on root port 0000:38:01.0, trained at x8 of its x16 when degraded is set. Both are
// RoCE ports of ConnectX-7s, every link Gen5.
func rdmaCheckNode(degraded bool) testfs.PCINode {
	link := func(f testfs.PCIFunction) testfs.PCIFunction {
		f.Speed, f.MaxSpeed, f.Width, f.MaxWidth = 32, 32, 16, 16
		return f
	}
	bridge := func(addr string, children ...testfs.PCIFunction) testfs.PCIFunction {
		return link(testfs.PCIFunction{Address: addr, Vendor: 0x1000, DevID: 0xc030, Class: 0x060400, IOMMUGroup: -1, Children: children})
	}
	nic := func(addr, rdma, netdev string) testfs.PCIFunction {
		return link(testfs.PCIFunction{Address: addr, Vendor: 0x15b3, DevID: 0x1021, Class: 0x020000, IOMMUGroup: -1,
			RDMA: rdma, LinkLayer: "Ethernet", Netdev: netdev})
	}
	nic1 := nic("0000:39:00.0", "mlx5_1", "ens2f0np0")
	if degraded {
		nic1.Width = 8
	}
	return testfs.PCINode{
		RootBuses: []testfs.PCIRootBus{
			{Name: "pci0000:18", NUMANode: 0, RootPorts: []testfs.PCIFunction{
				bridge("0000:18:01.0", bridge("0000:19:00.0", bridge("0000:1a:00.0", nic("0000:1b:00.0", "mlx5_0", "ens1f0np0"))))}},
			{Name: "pci0000:38", NUMANode: 1, RootPorts: []testfs.PCIFunction{bridge("0000:38:01.0", nic1)}},
		},
		Modules: []string{"mlx5_core", "mlx5_ib"},
	}
}

// lspciLink is what `lspci -vv -s ADDR` prints of a function's link (pciutils ls-caps.c
// cap_express_link), trained at staWidth of 16 lanes at 32 GT/s.
func lspciLink(addr string, staWidth int) string {
	sta := fmt.Sprintf("Speed 32GT/s, Width x%d", staWidth)
	if staWidth < 16 {
		sta = fmt.Sprintf("Speed 32GT/s, Width x%d (downgraded)", staWidth)
	}
	return addr[5:] + " Ethernet controller: Mellanox Technologies MT2910 Family [ConnectX-7]\n" +
		"\t\tLnkCap:\tPort #0, Speed 32GT/s, Width x16, ASPM not supported\n" +
		"\t\t\tClockPM- Surprise- LLActRep- BwNot- ASPMOptComp+\n" +
		"\t\tLnkSta:\t" + sta + "\n" +
		"\t\tLnkCap2: Supported Link Speeds: 2.5-32GT/s, Crosslink- Retimer+ 2Retimers+ DRS-\n" +
		"\t\tLnkSta2: Current De-emphasis Level: -6dB, EqualizationComplete+\n"
}

// runHostDeviceCheck runs the device check's host group on rdmaCheckNode against the built
// collector, with stand-ins for the tools it asks: nvidia-smi listing no GPU, ethtool -i printing
// the driver of drivers[netdev], and lspci -vv -s printing each function's link with the NIC
// mlx5_1 at lspciWidth lanes. Both RDMA functions' device/driver is mlx5_core.
func runHostDeviceCheck(t *testing.T, degraded bool, drivers map[string]string, lspciWidth int) (string, error) {
	t.Helper()
	bin := collectorBinary(t)
	root := t.TempDir()
	testfs.WritePCINode(t, root, rdmaCheckNode(degraded))
	for _, addr := range []string{"0000:1b:00.0", "0000:39:00.0"} {
		dir, err := filepath.EvalSymlinks(filepath.Join(root, "sys", "bus", "pci", "devices", addr))
		require.NoError(t, err)
		require.NoError(t, os.Symlink("../../../../bus/pci/drivers/mlx5_core", filepath.Join(dir, "driver")))
	}

	fakes := t.TempDir()
	write := func(name, body string) {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(fakes, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(fakes, name), []byte(body), 0o755))
	}
	write("nvidia-smi", "#!/bin/sh\necho 'No devices were found'\nexit 6\n")
	write("ethtool", "#!/bin/sh\n[ \"$1\" = -i ] && cat \"$(dirname \"$0\")/ethtool.d/$2\"\n")
	for nd, drv := range drivers {
		write("ethtool.d/"+nd, "driver: "+drv+"\nversion: 6.8.0-45-generic\nfirmware-version: 28.39.1002 (MT_0000000838)\nbus-info: \n")
	}
	write("lspci", "#!/bin/sh\n[ \"$1 $2\" = \"-vv -s\" ] && cat \"$(dirname \"$0\")/lspci.d/$3\" 2>/dev/null\n")
	for _, addr := range []string{"0000:18:01.0", "0000:19:00.0", "0000:1a:00.0", "0000:1b:00.0", "0000:38:01.0"} {
		write("lspci.d/"+addr, lspciLink(addr, 16))
	}
	write("lspci.d/0000:39:00.0", lspciLink("0000:39:00.0", lspciWidth))

	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+fakes+":"+os.Getenv("PATH"),
		"ICLENS_COLLECTOR="+bin,
		"DEVICE_CHECK_HOST_SECONDS=1",
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

var mlx5Drivers = map[string]string{"ens1f0np0": "mlx5_core", "ens2f0np0": "mlx5_core"}

// TestDeviceCheckRDMAAgrees: where ethtool names the PCI driver and lspci shows the links sysfs
// shows (mlx5_1 trained at x8 of x16, so degraded, and mlx5_0 not), the driver and link checks
// pass, the GPU checks SKIP with the reason and the script exits 0.
func TestDeviceCheckRDMAAgrees(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runHostDeviceCheck(t, true, mlx5Drivers, 8)
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS rnic_driver_names\n")
	assert.Contains(t, out, "device-check: PASS rnic_link_vs_lspci\n")
	assert.Contains(t, out, "device-check: SKIP gpu_pcie_bytes\n  no NVIDIA GPU found (nvidia-smi lists none)\n")
	assert.Contains(t, out, "mlx5_0/1 (ens1f0np0): ethtool -i mlx5_core, PCI driver mlx5_core, ethtool table mlx5_core")
	assert.Contains(t, out, "mlx5_1 (0000:39:00.0): degraded 1;")
	assert.Contains(t, out, "mlx5_0 (0000:1b:00.0): degraded 0;")
	assert.NotContains(t, out, "FAIL")
}

// TestDeviceCheckRDMADisagrees: ethtool names another driver for mlx5_0's netdev, and lspci shows
// mlx5_1 trained at x8 where sysfs (and so the collector) says x16: both checks fail, naming the
// device, and the script exits 1.
func TestDeviceCheckRDMADisagrees(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runHostDeviceCheck(t, false, map[string]string{"ens1f0np0": "bnxt_en", "ens2f0np0": "mlx5_core"}, 8)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, out, "device-check: FAIL rnic_driver_names\n")
	assert.Contains(t, out, "device-check: FAIL rnic_link_vs_lspci\n")
	assert.Contains(t, out, "mlx5_0/1 (ens1f0np0): ethtool -i bnxt_en, PCI driver mlx5_core: MISMATCH")
	assert.Contains(t, out, "mlx5_1 (0000:39:00.0): lspci says degraded 1, collector 0: MISMATCH")
	assert.Contains(t, out, "mlx5_0 (0000:1b:00.0): degraded 0;")
}

// hostGrow is the host window's load in the device check's tests: it doubles every counter file of
// the fixture at $1 (testfs.GrowCounters' rule, in shell), as traffic would, then waits the
// window's seconds ($2) for the collector to read them.
const hostGrow = `#!/bin/sh
find "$1/sys/devices" -type f \( -path '*/hw_counters/*' -o -path '*/counters/*' -o -path '*/counters_ext/*' -o -path '*/statistics/*' \) ! -name lifespan |
while read -r f; do
  v=$(cat "$f")
  case $v in ''|*[!0-9]*) continue ;; esac
  echo $((v * 2)) >"$f"
done
sleep "$2"
`

// runPlaneDeviceCheck runs the host group on an EFA node (two ports that split their bytes by
// operation) beside a multi-plane ConnectX-8 (mlx5_0 with its plane device smi1), with an rdma
// stand-in printing rdmaShow for `rdma dev show`, the fixture's counters doubled in the window.
// efaWrite, where not empty, replaces rdmap80s0's rdma_write_bytes.
func runPlaneDeviceCheck(t *testing.T, rdmaShow, efaWrite string) (string, error) {
	t.Helper()
	bin := collectorBinary(t)
	root := t.TempDir()
	efa := testfs.EFARDMANode()
	// EFARDMANode's received bytes (8 GB per unit) are below what its operations received
	// (recv 0.9 + rdma_read 4 + rdma_write_recv 3.6 GB): the numbers are invented, and what the
	// device check is to settle on a real P5. Here the port receives what it transmits.
	for i := range efa {
		efa[i].Ports[0].HW["rx_bytes"] = efa[i].Ports[0].HW["tx_bytes"]
	}
	if efaWrite != "" {
		efa[1].Ports[0].HW["rdma_write_bytes"] = efaWrite
	}
	require.NoError(t, testfs.WriteRDMANode(root, append(efa, testfs.MultiPlaneRDMANode()...)))
	fakes := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fakes, "grow"), []byte(hostGrow), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(fakes, "show.txt"), []byte(rdmaShow), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(fakes, "rdma"), []byte("#!/bin/sh\n[ \"$*\" = \"dev show\" ] && cat \"$(dirname \"$0\")/show.txt\"\n"), 0o755))
	for _, tool := range []string{"nvidia-smi", "ethtool", "lspci"} {
		require.NoError(t, os.WriteFile(filepath.Join(fakes, tool), []byte("#!/bin/sh\nexit 1\n"), 0o755))
	}
	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+fakes+":"+os.Getenv("PATH"),
		"ICLENS_COLLECTOR="+bin,
		"DEVICE_CHECK_HOST_SECONDS=4",
		"DEVICE_CHECK_HOST_LOAD="+filepath.Join(fakes, "grow")+" "+root,
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

const rdmaShowEFA = "0: rdmap79s0: node_type unspecified fw 0.0.0.0 node_guid 0e3c:5fff:fe4f:4f00 sys_image_guid 0000:0000:0000:0000\n" +
	"1: rdmap80s0: node_type unspecified fw 0.0.0.0 node_guid 0e3c:5fff:fe4f:5000 sys_image_guid 0000:0000:0000:0000\n" +
	"2: mlx5_0: node_type ca fw 40.44.1036 node_guid a088:c203:0050:6e70 sys_image_guid a088:c203:0050:6e70\n"

// TestDeviceCheckEFAAndPlanes: the EFA ports' operation bytes stay within their interconnect_io,
// and `rdma dev show` lists the plane device smi1 as type smi under mlx5_0: both checks pass.
func TestDeviceCheckEFAAndPlanes(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runPlaneDeviceCheck(t, rdmaShowEFA+rdmaShowPlane+" type smi parent mlx5_0\n", "")
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS rnic_efa_operation_bytes\n")
	assert.Contains(t, out, "device-check: PASS rnic_multiplane_parents\n  smi1: type smi, parent mlx5_0\n")
	assert.Contains(t, out, "rdmap79s0/1 transmit: operations ")
	assert.NotContains(t, out, "FAIL")
}

const rdmaShowPlane = "3: smi1: node_type ca fw 40.44.1036 node_guid a088:c203:0050:6e70 sys_image_guid a088:c203:0050:6e70"

// TestDeviceCheckEFAAndPlanesDisagree: an EFA port whose RDMA-write bytes alone exceed what the
// port transmitted, and an rdma that lists smi1 without a parent: both checks fail, naming the
// port and the device.
func TestDeviceCheckEFAAndPlanesDisagree(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runPlaneDeviceCheck(t, rdmaShowEFA+rdmaShowPlane+" type smi\n", "90000000000")
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, out, "device-check: FAIL rnic_multiplane_parents\n")
	assert.Contains(t, out, "smi1: rdma dev show: '"+rdmaShowPlane+" type smi': MISMATCH")
	assert.Contains(t, out, "device-check: FAIL rnic_efa_operation_bytes\n")
	assert.Regexp(t, `rdmap80s0/1 transmit: operations \d+ B \(\+\d+\), interconnect_io \d+ B \(\+\d+\): MISMATCH`, out)
	assert.NotRegexp(t, `rdmap79s0/1 [a-z]+: .*MISMATCH`, out)
}
