package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/otelcol-iclens/otelcol-iclens/internal/perf"
	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver/internal/metadata"
)

// NVIDIA Grace (GH200, GB200, Grace CPU Superchip): host memory and CPU PCIe bytes from the
// CoreSight PMUs of the SoC, which the kernel registers through arm_cspmu with the NVIDIA backend
// (drivers/perf/arm_cspmu/arm_cspmu.c, nvidia_cspmu.c; Documentation/admin-guide/perf/
// nvidia-pmu.rst). Every such PMU has, in sysfs:
//   - identifier: the PMIIDR as "%x\n" (arm_cspmu_get_identifier, arm_cspmu_identifier_show):
//     implementer in bits 0-11 (ARM_CSPMU_IMPL_ID_NVIDIA 0x36b), product id in bits 20-31
//     (nv_cspmu_match prodid: SCF 0x2cf, PCIE 0x103, NVLink-C2C1 0x104, NVLink-C2C0 0x105,
//     CNVLink 0x106);
//   - cpumask: the one CPU that handles its events, and associated_cpus: the socket's CPUs
//     (arm_cspmu_cpumask_show, cpumap_print_to_pagebuf as a list); events must be opened on a
//     CPU of associated_cpus (arm_cspmu_event_init), the cpumask one is used;
//   - format/event "config:0-32" (ARM_CSPMU_FORMAT_EVENT_ATTR) and the PMU's filter fields;
//   - events/<name> "event=0x%llx\n" (arm_cspmu_sysfs_event_show), without .scale or .unit.
//
// The name's number is the NUMA node of the PMU's first associated CPU (nv_cspmu_format_name,
// NAME_FMT_SOCKET: cpu_to_node), so the series are placed by the cpumask CPU like every other
// PMU, never by the name.
//
// What counts where is the document's "Traffic Coverage" table: traffic into a socket's local
// CPU memory (CMEM) is counted by exactly one PMU per source: PCIe devices by the PCIE PMU, the
// GPU's ATS-translated and EGM traffic by NVLink-C2C0 (on the Grace CPU Superchip: the remote
// socket's PCIe reads and relaxed-ordered writes), the GPU's untranslated traffic by NVLink-C2C1,
// the CPU and the remote socket's CPU and strongly-ordered PCIe writes by SCF, and the remote
// socket's GPU and other PCIe traffic by CNVLink.

var (
	graceSCF  = regexp.MustCompile(`^nvidia_scf_pmu_[0-9]+$`)
	graceC2C0 = regexp.MustCompile(`^nvidia_nvlink_c2c0_pmu_[0-9]+$`)
	gracePCIe = regexp.MustCompile(`^nvidia_pcie_pmu_[0-9]+$`)
)

// PMIIDR product ids (nvidia_cspmu.c nv_cspmu_match, the prodid >> 20).
const (
	cspmuImplementerNVIDIA = 0x36b // ARM_CSPMU_IMPL_ID_NVIDIA (arm_cspmu.h)
	productSCF             = 0x2cf
	productPCIe            = 0x103
	productC2C0            = 0x105
)

// grace: cpu_memory (socketN/cmem) is the SCF's CMEM events plus the NVLink-C2C0 PMU's local
// events; cpu_pcie (socketN/pcie, per root port socketN/pcie/portI) is the PCIE PMU's.
//   - SCF (scf_pmu_event_attrs): cmem_rd_data 0x1a5, cmem_wr_total_bytes 0x1db: the CPU's (and the
//     remote socket's CPU and SO PCIe) reads and writes of local CMEM. cmem_wr_total_bytes is bytes
//     by its name. The size of one cmem_rd_data count is not stated by the kernel: 32 bytes is
//     assumed (NVIDIA's Grace performance tuning guide derives read bandwidth as
//     cmem_rd_data x 32); unverified, a check for make device-check.
//   - NVLink-C2C0 (mcf_pmu_event_attrs): rd_bytes_loc 0x0, wr_bytes_loc 0x2: the GPU's ATS and EGM
//     traffic into local memory, which the document gives CMEM only ("Local GMEM: N/A"); bytes
//     by name. The _rem events are the other socket's memory and are counted there.
//   - Not in cpu_memory: the PCIE PMU's, the NVLink-C2C1 PMU's and the CNVLink PMU's local events,
//     because "local" there is local CMEM and local GMEM together (the document's table gives
//     both destinations to them) and Grace's PMUs cannot filter the destination: a NIC writing
//     into the GPU's memory (GPUDirect RDMA) would be counted as host memory. PCIe devices'
//     bytes are in cpu_pcie instead.
var grace = platform{
	name: "grace",
	memory: &memoryTable{pmu: graceSCF, device: "cmem", product: productSCF, events: []eventDef{
		{alias: "cmem_rd_data", raw: "event=0x1a5", direction: dirRead, bytesPerCount: 32, port: -1},
		{alias: "cmem_wr_total_bytes", raw: "event=0x1db", direction: dirWrite, bytesPerCount: 1, port: -1},
	}, also: &memoryTable{pmu: graceC2C0, device: "cmem", product: productC2C0, events: []eventDef{
		{alias: "rd_bytes_loc", raw: "event=0x0", direction: dirRead, bytesPerCount: 1, port: -1},
		{alias: "wr_bytes_loc", raw: "event=0x2", direction: dirWrite, bytesPerCount: 1, port: -1},
	}}},
	cspmuPCIe: &cspmuPCIeTable{pmu: gracePCIe, product: productPCIe, device: "pcie", portField: "root_port", events: []eventDef{
		// PCIE PMU (mcf_pmu_event_attrs): reads by the root ports' devices of local and remote
		// memory are bytes sent to the devices (transmit), their writes bytes received from them.
		// CPU MMIO to the devices is not memory traffic and is not counted by this PMU.
		{alias: "rd_bytes_loc", raw: "event=0x0", direction: dirTransmit, bytesPerCount: 1},
		{alias: "rd_bytes_rem", raw: "event=0x1", direction: dirTransmit, bytesPerCount: 1},
		{alias: "wr_bytes_loc", raw: "event=0x2", direction: dirReceive, bytesPerCount: 1},
		{alias: "wr_bytes_rem", raw: "event=0x3", direction: dirReceive, bytesPerCount: 1},
	}},
}

// cspmuPCIeTable is a CoreSight PCIe PMU with one instance per socket and a root port filter.
type cspmuPCIeTable struct {
	pmu     *regexp.Regexp
	product uint32
	// device is the series' name below the socket.
	device string
	// portField is the format field selecting root ports, one bit each ("root_port", config1:0-9
	// in pcie_pmu_format_attrs: NV_PCIE_PORT_COUNT 10). Its width is the number of ports, read
	// from sysfs as the document says ("format/root_port shows the valid bits").
	portField string
	// events are counted per socket, or per root port with the port's bit set.
	events []eventDef
}

// eventsFor lists the events for ports root ports, or once for the whole socket (ports < 0),
// where the filter stays 0 and the kernel counts every root port (nv_cspmu_event_filter returns
// filter_default_val, NV_PCIE_FILTER_ID_MASK).
func (t *cspmuPCIeTable) eventsFor(ports int) []eventDef {
	var defs []eventDef
	if ports < 0 {
		for _, e := range t.events {
			e.port = -1
			defs = append(defs, e)
		}
		return defs
	}
	for p := 0; p < ports; p++ {
		for _, e := range t.events {
			e.port, e.terms = p, fmt.Sprintf("%s=%#x", t.portField, uint64(1)<<p)
			defs = append(defs, e)
		}
	}
	return defs
}

// cspmuPCIe plans the CPU PCIe series from a CoreSight PCIe PMU: one group per socket, or one
// per root port (the events of one port together; the kernel multiplexes the groups where the
// PMU has fewer counters, and running_ratio says so). Which PCI root port a root_port bit is
// not in sysfs or the kernel: ports are reported without pci.bus_id.
func (d *discovery) cspmuPCIe(names []string, t *cspmuPCIeTable) {
	for _, name := range names {
		if !t.pmu.MatchString(name) {
			continue
		}
		ports := -1
		if d.cfg.PCIe.Granularity == GranularityPort {
			p, err := perf.LoadPMU(d.r, filepath.Join(d.paths.pmus, name))
			if err != nil {
				d.problem(name, fmt.Errorf("PMU %s: %w", name, err))
				continue
			}
			f, ok := p.Formats[t.portField]
			if !ok {
				d.problem(name, fmt.Errorf("PMU %s: format/%s: missing, root ports cannot be told apart", name, t.portField))
				continue
			}
			ports = f.Width()
		}
		p, members := d.loadPMU(name, source{pmu: t.pmu, events: t.eventsFor(ports), product: t.product})
		if p == nil {
			continue
		}
		d.plan.pciePMUs++
		for die, cpu := range p.CPUs {
			place := d.place(cpu)
			dev := d.dieName(p, die, place) + "/" + t.device
			var g *counterGroup
			for i, m := range members {
				if g == nil || m.port != members[i-1].port {
					if g != nil {
						d.plan.groups = append(d.plan.groups, g)
					}
					g = newGroup(name, cpu)
				}
				m := *m
				key := seriesKey{component: metadata.AttributeComponentCPUPcie, direction: m.direction, device: dev, numa: place.numa}
				if m.port >= 0 {
					key.device = fmt.Sprintf("%s/port%d", dev, m.port)
				}
				m.agg = d.aggregate(key)
				g.add(&m)
			}
			d.plan.groups = append(d.plan.groups, g)
		}
	}
}

// checkCSPMUProduct checks an arm_cspmu PMU's identifier: the NVIDIA implementer and the product
// its name promises, so that the events' meaning is the one nvidia_cspmu.c gives that product.
func checkCSPMUProduct(r *sysfs.Reader, p *perf.PMU, product uint32) error {
	path := filepath.Join(p.Dir, "identifier")
	s, err := r.ReadString(path)
	if err != nil {
		return fmt.Errorf("PMU %s: %w", p.Name, err)
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return fmt.Errorf("%s: not a PMIIDR in hex, got %q", path, s)
	}
	if impl, prod := uint32(v)&0xfff, uint32(v)>>20; impl != cspmuImplementerNVIDIA || prod != product {
		return fmt.Errorf("%s: implementer %#x product %#x, want NVIDIA (%#x) product %#x, got %q", path, impl, prod, cspmuImplementerNVIDIA, product, s)
	}
	return nil
}
