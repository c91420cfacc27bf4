package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/prometheus/procfs"
)

// readCPUID identifies the first processor of the cpuinfo file at path (vendor, family, model,
// the hypervisor flag), parsed with prometheus/procfs.
func readCPUID(path string) (id cpuID, err error) {
	// procfs v0.23.0 parseCPUInfoX86 indexes past a "processor:" line without ": " (found by
	// FuzzReadCPUID): a malformed file, or one from a recording, must cost an error, not the process.
	defer func() {
		if r := recover(); r != nil {
			id, err = cpuID{}, fmt.Errorf("%s: cannot parse: %v", path, r)
		}
	}()
	fs, err := procfs.NewFS(filepath.Dir(path))
	if err != nil {
		return cpuID{}, err
	}
	infos, err := fs.CPUInfo()
	if err != nil {
		return cpuID{}, fmt.Errorf("%s: %w", path, err)
	}
	if len(infos) == 0 || infos[0].VendorID == "" {
		return cpuID{}, fmt.Errorf("%s: no vendor_id", path)
	}
	first := infos[0]
	id = cpuID{vendor: first.VendorID, hypervisor: slices.Contains(first.Flags, "hypervisor")}
	id.family, _ = strconv.Atoi(first.CPUFamily)
	id.model, _ = strconv.Atoi(first.Model)
	return id, nil
}
