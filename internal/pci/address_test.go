package pci

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// DCGM and NVML print the bus id as nvmlPciInfo_t.busId: "%08X:%02X:%02X.0"; the kernel as pci_name().
func TestNormaliseAddress(t *testing.T) {
	for in, want := range map[string]string{
		"00000000:3B:00.0": "0000:3b:00.0",
		"0000:3b:00.0":     "0000:3b:00.0",
		"00000001:C1:00.1": "0001:c1:00.1",
		"00010000:01:00.0": "10000:01:00.0",
		"3B:00.0":          "",
		"<<<NULL>>>":       "",
		"00000000:3G:00.0": "",
	} {
		assert.Equal(t, want, NormaliseAddress(in), in)
	}
}
