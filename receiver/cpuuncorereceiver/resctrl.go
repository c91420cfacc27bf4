package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// resctrl Memory Bandwidth Monitoring is the last resort for memory bandwidth, used only where no
// memory-controller PMU exists. Its limits (Documentation/arch/x86/resctrl.rst): one combined
// byte count per L3 domain (mon_data/mon_L3_<id>/mbm_total_bytes, no read/write split), counted
// by RMID for the tasks of the root group only ("In CTRL_MON groups these files provide the sum
// for all tasks in the CTRL_MON group and all tasks in MON groups", so tasks moved into other
// CTRL_MON groups are missing), and only traffic originated by CPU cores: device DMA, the
// GPUDirect and NIC traffic this distribution is about, is not in it. The file system must have
// been mounted (mount -t resctrl resctrl /sys/fs/resctrl, which needs root); reading it does not.

// mbmSource is one L3 domain's mbm_total_bytes.
type mbmSource struct {
	device string
	path   string
	key    seriesKey
}

const mbmNote = "no memory-controller PMU: falling back to resctrl MBM (mbm_total_bytes per L3 domain, cpuuncore.memory.io). " +
	"It counts reads and writes together, only traffic of CPU cores in the root resctrl group, and no device DMA"

// resctrl finds the MBM counters under root_path/sys/fs/resctrl.
func (d *discovery) resctrl() {
	base := d.paths.resctrl
	features, err := d.r.ReadString(filepath.Join(base, "info", "L3_MON", "mon_features"))
	if err != nil || !strings.Contains(features, "mbm_total_bytes") {
		return // not mounted, or no MBM on this CPU
	}
	domains, _ := filepath.Glob(filepath.Join(base, "mon_data", "mon_L3_*"))
	sort.Strings(domains)
	for _, dir := range domains {
		path := filepath.Join(dir, "mbm_total_bytes")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		id := strings.TrimLeft(strings.TrimPrefix(filepath.Base(dir), "mon_L3_"), "0")
		if id == "" {
			id = "0"
		}
		dev := "l3domain" + id + "/mbm"
		d.plan.mbm = append(d.plan.mbm, mbmSource{device: dev, path: path, key: seriesKey{combined: true, device: dev, numa: -1}})
	}
	if len(d.plan.mbm) > 0 {
		d.note("resctrl", mbmNote)
	}
}
