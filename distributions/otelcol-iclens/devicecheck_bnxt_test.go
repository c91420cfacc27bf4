package otelcoliclens_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// bnxtNode is a Broadcom RoCE port (bnxt_re0, a PF: no physfn link) with its byte counters in
// hw_counters: tx_roce_only_bytes at roce, rx_roce_only_bytes at 1500 (at 0 where roce is "0").
func bnxtNode(roce string) []testfs.RDMADevice {
	rx := "0"
	if roce != "0" {
		rx = "1500"
	}
	return []testfs.RDMADevice{{
		Name: "bnxt_re0", PCIPath: "pci0000:00/0000:00:02.0/0000:04:00.0", NUMA: "0", Driver: "bnxt_en", Vendor: "0x14e4",
		Attrs: map[string]string{"fw_ver": "227.0.130.0", "hca_type": "bnxt_re", "node_guid": "0a0b:0cff:fe0d:0e0f"},
		Ports: []testfs.RDMAPort{{Num: 1, LinkLayer: "Ethernet", State: "4: ACTIVE", PhysState: "5: LinkUp", Rate: "25 Gb/sec (1X EDR)",
			HW: map[string]string{"rx_bytes": "5000", "tx_bytes": "7000", "rx_pkts": "50", "tx_pkts": "70", "lifespan": "10",
				"tx_roce_only_bytes": roce, "rx_roce_only_bytes": rx},
			Ndevs: map[int]string{0: "ens2f0np0"}}},
		Netdevs: []testfs.RDMANetdev{{Name: "ens2f0np0", DevPort: 0, TX: 1, RX: 2}},
	}}
}

// runBnxtDeviceCheck runs the host group on bnxtNode(roce) with load as DEVICE_CHECK_HOST_LOAD
// (run with the root and the window's seconds).
func runBnxtDeviceCheck(t *testing.T, roce, load string) (string, error) {
	t.Helper()
	bin := collectorBinary(t)
	root, fakes := t.TempDir(), t.TempDir()
	require.NoError(t, testfs.WriteRDMANode(root, bnxtNode(roce)))
	stubs := map[string]string{"load": load}
	for _, tool := range []string{"nvidia-smi", "ethtool", "lspci", "rdma"} {
		stubs[tool] = "#!/bin/sh\nexit 1\n"
	}
	writeStubs(t, fakes, stubs)
	cmd := exec.Command(deviceCheckScript(t))
	cmd.Env = append(os.Environ(),
		"PATH="+fakes+string(os.PathListSeparator)+os.Getenv("PATH"),
		"ICLENS_COLLECTOR="+bin,
		"DEVICE_CHECK_HOST_SECONDS=2",
		"DEVICE_CHECK_BURST_SECONDS=1",
		"DEVICE_CHECK_HOST_LOAD="+filepath.Join(fakes, "load")+" "+root,
		"DEVICE_CHECK_ROOT="+root,
		"DEVICE_CHECK_OUT="+t.TempDir(),
	)
	out, err := cmd.CombinedOutput()
	t.Logf("device-check:\n%s", out)
	return string(out), err
}

// TestDeviceCheckBnxtRoCE: a PF whose RoCE byte counters move with the traffic (the load doubles
// every counter: tx_roce_only_bytes +3000, tx_bytes +7000): the collector's rnic transmit grew by
// tx_roce_only_bytes' growth, and rnic_bnxt_roce_only_bytes passes.
func TestDeviceCheckBnxtRoCE(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	out, err := runBnxtDeviceCheck(t, "3000", hostGrow)
	require.NoError(t, err)
	assert.Contains(t, out, "device-check: PASS rnic_bnxt_roce_only_bytes\n  bnxt_re0/1: served +3000 B, tx_roce_only_bytes +3000 B (tx_bytes +7000 B): ok\n")
	assert.NotContains(t, out, "FAIL")
}

// TestDeviceCheckBnxtRoCEDisagree: a PF whose RoCE byte counters read 0 when the receiver planned
// its port (so it counts tx_bytes, as for a driver that does not fill them) and move under the
// load: the collector served tx_bytes' growth, not the RoCE bytes, and the check fails.
func TestDeviceCheckBnxtRoCEDisagree(t *testing.T) {
	t.Parallel() // the device check's windows wait on the clock, not the CPU (Makefile E2E_PARALLEL)
	load := strings.Replace(hostGrow, "sleep \"$2\"",
		"echo 5000 >\"$1/sys/class/infiniband/bnxt_re0/ports/1/hw_counters/tx_roce_only_bytes\"\nsleep \"$2\"", 1)
	require.NotEqual(t, hostGrow, load)
	out, err := runBnxtDeviceCheck(t, "0", load)
	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "the script must fail: %v", err)
	assert.Contains(t, out, "device-check: FAIL rnic_bnxt_roce_only_bytes\n  bnxt_re0/1: served +7000 B, tx_roce_only_bytes +5000 B (tx_bytes +7000 B): MISMATCH\n")
}
