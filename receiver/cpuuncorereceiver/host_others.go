//go:build !linux

package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import "fmt"

// readCPUID: prometheus/procfs parses cpuinfo on Linux only. A replay on another platform runs
// with the kernel's own aliases and scales, as on an unidentified CPU.
func readCPUID(path string) (cpuID, error) {
	return cpuID{}, fmt.Errorf("%s: %w", path, errUnsupportedPlatform)
}
