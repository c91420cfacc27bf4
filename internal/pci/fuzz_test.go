package pci

import (
	"regexp"
	"testing"
)

// FuzzNormaliseAddress: a bus id from DCGM or NVML ("00000000:3B:00.0", or whatever a fake, a
// broken library or a recording hands over) becomes the kernel's pci_name() form or "". Seeds in
// testdata/fuzz/FuzzNormaliseAddress besides these; `make fuzz` runs it for a bounded number of inputs.
func FuzzNormaliseAddress(f *testing.F) {
	for _, s := range []string{"00000000:3B:00.0", "0000:3b:00.0", "00000001:3B:00.0\x00\x00", "3B:00.0", "", "zzzz:zz:zz.z", "000000000000:3B:00.0"} {
		f.Add(s)
	}
	kernel := regexp.MustCompile(`^[0-9a-f]{4,}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got := NormaliseAddress(s); got != "" && !kernel.MatchString(got) {
			t.Fatalf("NormaliseAddress(%q) = %q", s, got)
		}
	})
}
