package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

// TestGrowCounters: every counter doubles once, under its real path; what is not a counter, a
// saturated 32-bit PMA value and a value that does not parse stay as they are.
func TestGrowCounters(t *testing.T) {
	root := t.TempDir()
	port := "sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0/ports/1/"
	files := map[string]string{
		port + "counters/port_xmit_data":                    "100\n",
		port + "counters/port_rcv_data":                     "4294967295\n",
		port + "counters/symbol_error":                      "N/A (no PMA)\n",
		port + "counters_ext/port_xmit_data_64":             "7\n",
		port + "hw_counters/lifespan":                       "10\n",
		port + "hw_counters/rx_write_requests":              "5\n",
		port + "rate":                                       "100 Gb/sec (4X EDR)\n",
		"sys/devices/virtual/net/bond0/statistics/tx_bytes": "4000\n",
		"sys/devices/virtual/net/bond0/mtu":                 "1500\n",
	}
	for p, v := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// The class link leads to the same files: they grow once.
	if err := os.MkdirAll(filepath.Join(root, "sys/class/infiniband"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0", filepath.Join(root, "sys/class/infiniband/mlx5_0")); err != nil {
		t.Fatal(err)
	}

	changed := GrowCounters(t, root)
	want := map[string]string{
		port + "counters/port_xmit_data":                    "200\n",
		port + "counters_ext/port_xmit_data_64":             "14\n",
		port + "hw_counters/rx_write_requests":              "10\n",
		"sys/devices/virtual/net/bond0/statistics/tx_bytes": "8000\n",
	}
	if len(changed) != len(want) {
		t.Errorf("changed %v, want %v", changed, want)
	}
	for p, v := range want {
		if changed[p] != v {
			t.Errorf("%s: changed to %q, want %q", p, changed[p], v)
		}
	}
	for p, orig := range files {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		exp := orig
		if v, ok := want[p]; ok {
			exp = v
		}
		if string(b) != exp {
			t.Errorf("%s holds %q, want %q", p, b, exp)
		}
	}
}
