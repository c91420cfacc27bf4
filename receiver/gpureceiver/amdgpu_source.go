package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/pci"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// amdVendorID is the PCI vendor id of AMD (include/linux/pci_ids.h PCI_VENDOR_ID_ATI 0x1002, the
// id amdgpu's pciidlist in amdgpu_drv.c matches).
const amdVendorID = "0x1002"

// amdMetricsMax bounds a read of gpu_metrics: the largest table of kgd_pp_interface.h is a few KiB
// (gpu_metrics_v1_8, with its partition stats).
const amdMetricsMax = 64 << 10

// amdgpuSource reads AMD GPUs from sysfs, without ROCm: each DRM card whose PCI function is an AMD
// device with a gpu_metrics table (amdgpu_pm.c, dev_attr_gpu_metrics, created where the SMU
// driver implements get_gpu_metrics). Every counter it serves is a cumulative value of the table.
type amdgpuSource struct {
	root    string
	logger  *zap.Logger
	want    quantitySet
	faults  *faults
	numa    func(string) int64
	selects func(gpuDevice) bool

	devs []gpuDevice
	// tables[i] is the gpu_metrics file of devs[i].
	tables []string
	// pcie is each GPU's last PCIe reading, by PCI address: the baseline of its next rate
	// (amdgpu_pcie.go).
	pcie map[string]amdPCIeReading
}

// openAMDGPU discovers the AMD GPUs under root (the host's filesystem root).
func openAMDGPU(root string, logger *zap.Logger, want quantitySet, numa func(string) int64, selects func(gpuDevice) bool) (*amdgpuSource, error) {
	s := &amdgpuSource{root: root, logger: logger, want: want, faults: newFaults(logger), numa: numa, selects: selects,
		pcie: map[string]amdPCIeReading{}}
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *amdgpuSource) kind() string         { return "amdgpu" }
func (s *amdgpuSource) devices() []gpuDevice { return s.devs }
func (s *amdgpuSource) close() error         { return nil }

// refresh lists /sys/class/drm/card<N>: each is a link to the card's DRM device under its PCI
// function, and card<N>/device the link to that function (drm_sysfs.c drm_sysfs_minor_alloc,
// parent = the PCI device). Connectors (card0-DP-1) are not cards.
func (s *amdgpuSource) refresh() error {
	class := filepath.Join(s.root, "sys", "class", "drm")
	entries, err := os.ReadDir(class)
	if err != nil {
		return fmt.Errorf("no AMD GPU: %w", err)
	}
	type found struct {
		d     gpuDevice
		table string
	}
	var all []found
	var r sysfs.Reader
	for _, e := range entries {
		n := e.Name()
		if !strings.HasPrefix(n, "card") || strings.ContainsRune(n, '-') {
			continue
		}
		dev := filepath.Join(class, n, "device")
		if v, err := r.ReadString(filepath.Join(dev, "vendor")); err != nil || v != amdVendorID {
			continue
		}
		table := filepath.Join(dev, "gpu_metrics")
		if _, err := os.Stat(table); err != nil {
			continue
		}
		// The link's last element is the PCI address (../../../0000:c1:00.0); nothing is
		// followed outside the tree.
		target, err := os.Readlink(dev)
		if err != nil {
			continue
		}
		d := gpuDevice{busID: pci.NormaliseAddress(filepath.Base(target)), numaNode: -1}
		if d.busID != "" && s.numa != nil {
			d.numaNode = s.numa(d.busID)
		}
		// unique_id (amdgpu_pm.c, "%016llx" of the ASIC serial) and product_name (the FRU's,
		// amdgpu_fru_eeprom.c) exist where the ASIC has them.
		if v, err := r.ReadString(filepath.Join(dev, "unique_id")); err == nil {
			d.uuid = v
		}
		if v, err := r.ReadString(filepath.Join(dev, "product_name")); err == nil {
			d.model = v
		}
		all = append(all, found{d, table})
	}
	// Named in PCI address order, as NVML and DCGM index their GPUs.
	slices.SortFunc(all, func(a, b found) int { return strings.Compare(a.d.busID, b.d.busID) })
	s.devs, s.tables = nil, nil
	for i, f := range all {
		f.d.id = uint(i)
		f.d.name = "gpu" + strconv.Itoa(i)
		if s.selects != nil && !s.selects(f.d) {
			continue
		}
		s.devs = append(s.devs, f.d)
		s.tables = append(s.tables, f.table)
	}
	// A GPU that is gone starts from a new baseline if it comes back.
	maps.DeleteFunc(s.pcie, func(bus string, _ amdPCIeReading) bool {
		return !slices.ContainsFunc(s.devs, func(d gpuDevice) bool { return d.busID == bus })
	})
	if len(s.devs) == 0 {
		if len(all) > 0 {
			return errors.New("no AMD GPU left after include / exclude")
		}
		return errors.New("no AMD GPU with a gpu_metrics table under " + class)
	}
	return nil
}

// poll reads every GPU's table. A table that cannot be read or parsed costs that GPU's series,
// said once until it reads again.
func (s *amdgpuSource) poll(now time.Time, buf []sample) ([]sample, error) {
	ts := now.UnixMicro()
	for i, d := range s.devs {
		key := d.name + "/gpu_metrics"
		b, err := sysfs.ReadFile(s.tables[i], amdMetricsMax)
		var m amdMetrics
		if err == nil {
			m, err = parseAMDMetrics(b)
		}
		if err != nil {
			s.faults.fail(key, fmt.Errorf("%s: %w", s.tables[i], err), 1)
			continue
		}
		s.faults.recover(key)
		// Only what the table holds (an attribute-encoded 1.9 table may leave any of it out).
		add := func(present amdHas, q quantity, f float64, u uint64) {
			if m.has&present == present && s.want.has(q) {
				buf = append(buf, sample{gpu: i, q: q, ts: ts, valid: true, f: f, u: u})
			}
		}
		// KB as the header's comment says ("XGMI accumulated data transfer size(KiloBytes)"),
		// taken as 1024 bytes, as smu_v13_0_6 fills it from the firmware's XgmiReadDataSizeAcc.
		var rd, wr uint64
		for l := 0; l < amdXGMILinks; l++ {
			rd += m.xgmiReadKB[l]
			wr += m.xgmiWriteKB[l]
			// Per link (gpu.xgmi.link.io, opt-in): every entry of the arrays, the unused ones
			// too (an eight-GPU MI300X platform uses seven); a link reading 0 while its
			// peers carry traffic is the one to look at.
			if s.want.has(qXGMILinkTxBytes) && m.has&(amdHasXGMIRead|amdHasXGMIWrite) == amdHasXGMIRead|amdHasXGMIWrite {
				buf = append(buf, sample{gpu: i, q: qXGMILinkTxBytes, ts: ts, valid: true, u: m.xgmiWriteKB[l] * 1024, entity: uint32(l)},
					sample{gpu: i, q: qXGMILinkRxBytes, ts: ts, valid: true, u: m.xgmiReadKB[l] * 1024, entity: uint32(l)})
			}
		}
		add(amdHasXGMIWrite, qXGMITxBytes, 0, wr*1024)
		add(amdHasXGMIRead, qXGMIRxBytes, 0, rd*1024)
		add(amdHasUMC, qDRAMActive, float64(m.umcActivity)/100, 0)
		add(amdHasPCIeReplays, qPCIeReplays, 0, m.pcieReplays)
		if m.pcieWidth > 0 {
			add(amdHasPCIeWidth, qPCIeLinkWidth, 0, uint64(m.pcieWidth))
		}
		if g := amdPCIeGeneration(m.pcieSpeed); g > 0 {
			add(amdHasPCIeSpeed, qPCIeLinkGen, 0, uint64(g))
		}
		if s.want.has(qPCIeBothRate) {
			buf = s.pcieRate(i, d, m, ts, buf)
		}
	}
	return buf, s.faults.take()
}

// pcieRate appends GPU i's PCIe bytes/s since its last reading (amdPCIeRate), or the sample that
// sets its baseline: the first, or one after the accumulators started over. Nothing is appended
// while the firmware has not accumulated since the baseline, so that the next rate spans both
// scrapes. A table without accumulation_counter (1.4, 1.5) serves none, said once.
func (s *amdgpuSource) pcieRate(i int, d gpuDevice, m amdMetrics, ts int64, buf []sample) []sample {
	key := d.name + "/gpu_pcie"
	if need := amdHasPCIeBandwidth | amdHasAccumulations; m.has&need != need {
		s.faults.notProvided(key, fmt.Sprintf("gpu_metrics %d.%d has no pcie_bandwidth_acc or no accumulation_counter (tables 1.6 and later have both): the GPU's PCIe bytes are not served", m.formatRev, m.contentRev))
		return buf
	}
	cur := amdPCIeReading{acc: m.pcieBandwidthAcc, cycles: m.accumulations, bits: m.accumulationBits}
	prev, ok := s.pcie[d.busID]
	if !ok {
		s.pcie[d.busID] = cur
		return append(buf, sample{gpu: i, q: qPCIeBothRate, ts: ts})
	}
	rate, step, err := amdPCIeRate(prev, cur)
	switch step {
	case amdPCIeSame:
		return buf
	case amdPCIeRestart:
		s.pcie[d.busID] = cur
		if err != nil {
			s.faults.fail(key, fmt.Errorf("%s: %w", s.tables[i], err), 1)
		}
		return append(buf, sample{gpu: i, q: qPCIeBothRate, ts: ts})
	}
	s.faults.recover(key)
	s.pcie[d.busID] = cur
	return append(buf, sample{gpu: i, q: qPCIeBothRate, ts: ts, valid: true, f: rate})
}
