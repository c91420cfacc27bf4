package rnicreceiver

import (
	"path/filepath"
	"strings"
	"testing"
)

// Fuzz targets for what the receiver parses from outside input besides rate (FuzzParseRate) and
// counter values (sysfs.FuzzParseUint). Seeds in testdata/fuzz/<Fuzz...>/ besides the f.Add
// ones; `make fuzz` runs each for a bounded number of inputs.

// FuzzParseStateID: state and phys_state as core sysfs.c state_show / phys_state_show print them
// ("%d: %s"), or anything else: an id or an error naming the file.
func FuzzParseStateID(f *testing.F) {
	for _, s := range []string{"4: ACTIVE", "5: LinkUp", "1: DOWN", "ACTIVE", ":", "-1: X", "99999999999999999999: X"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := parseStateID("/sys/p/state", b); err != nil && !strings.Contains(err.Error(), "/sys/p/state") {
			t.Fatalf("error %v does not name the file", err)
		}
	})
}

// FuzzNetdevName: a name read from gid_attrs/ndevs/* or parent that passes validNetdevName keeps
// the class/net path it is joined into inside class/net.
func FuzzNetdevName(f *testing.F) {
	for _, s := range []string{"bond0", "ens1f0np0", "..", "../../etc", "a/b", "eth0:1", "0123456789abcdef"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !validNetdevName(name) {
			return
		}
		base := filepath.Join("/sys", "class", "net")
		p := filepath.Join(base, name, "statistics")
		if filepath.Dir(filepath.Dir(p)) != base {
			t.Fatalf("valid name %q leads to %s", name, p)
		}
	})
}

// FuzzEthtoolTable: any driver name (from the ethtool GDRVINFO ioctl, or a recording) picks a
// table whose statistic names map to known metrics.
func FuzzEthtoolTable(f *testing.F) {
	for _, s := range []string{"mlx5_core", "bnxt_en", "ice", "i40e", "", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, driver string) {
		for _, st := range ethtoolTable(driver) {
			if st.name == "" {
				t.Fatalf("driver %q: a statistic without a name", driver)
			}
		}
	})
}
