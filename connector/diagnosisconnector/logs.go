package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
)

// Log record attributes (README.md, Contract).
const (
	attrVerdict  = "verdict"
	attrPrevious = "previous_verdict"
	attrDevice   = "device"
)

// logChanges appends one record per verdict change of node n: its traffic verdict when a new one
// holds (previous_verdict the one before), a device verdict when it starts and when it clears
// (verdict "" then).
func (e *engine) logChanges(ld plog.Logs, n *node, v *nodeView, ev map[verdictKey]float64, holding map[verdictKey]bool, ts pcommon.Timestamp) {
	var recs []logRecord
	for _, nv := range nodeVerdicts {
		if holding[verdictKey{nv, ""}] {
			if nv != n.nodeHeld {
				recs = append(recs, logRecord{verdict: nv, previous: n.nodeHeld, body: sentence(nv, "", n, v)})
				n.nodeHeld = nv
			}
			break
		}
	}
	var keys []verdictKey
	for k := range holding {
		if k.device != "" {
			keys = append(keys, k)
		}
	}
	for k := range n.deviceHeld {
		if !holding[k] {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].device+"\x00"+keys[i].verdict < keys[j].device+"\x00"+keys[j].verdict
	})
	for _, k := range keys {
		switch {
		case holding[k] && !n.deviceHeld[k]:
			n.deviceHeld[k] = true
			recs = append(recs, logRecord{verdict: k.verdict, device: k.device, body: sentence(k.verdict, k.device, n, v)})
		case !holding[k] && n.deviceHeld[k]:
			delete(n.deviceHeld, k)
			recs = append(recs, logRecord{previous: k.verdict, device: k.device,
				body: fmt.Sprintf("%s: %s: %s cleared", nodeName(n), k.device, strings.ReplaceAll(k.verdict, "_", " "))})
		}
	}
	if len(recs) == 0 {
		return
	}
	rl := ld.ResourceLogs().AppendEmpty()
	n.resource.CopyTo(rl.Resource().Attributes())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	for _, r := range recs {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(ts)
		lr.SetObservedTimestamp(ts)
		if r.verdict == "" || r.verdict == HealthyGPUDirect || r.verdict == Idle {
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
		} else {
			lr.SetSeverityNumber(plog.SeverityNumberWarn)
			lr.SetSeverityText("WARN")
		}
		lr.Body().SetStr(r.body)
		a := lr.Attributes()
		a.PutStr(attrVerdict, r.verdict)
		a.PutStr(attrPrevious, r.previous)
		a.PutStr(attrDevice, r.device)
		// The evidence the verdict was decided on: the node's ratios, and the device's own.
		for k, x := range ev {
			if k.device == "" || k.device == r.device {
				a.PutDouble(k.verdict, x)
			}
		}
	}
}

type logRecord struct {
	verdict, previous, device, body string
}

func nodeName(n *node) string {
	if n.name == "" {
		return "this node"
	}
	return n.name
}

// sentence is what an operator reads: what the node is doing, the figures, what to check.
func sentence(verdict, device string, n *node, v *nodeView) string {
	name := nodeName(n)
	switch verdict {
	case HealthyGPUDirect:
		return fmt.Sprintf("%s: healthy GPUDirect RDMA: RDMA %s, GPU PCIe %s, root-port writes %s of the RDMA bytes",
			name, bps(v.rdma), bps(v.gpu), pct(v.pathWritePerRDMA()))
	case TCPFallback:
		nd, rate := busiest(v.netdevs)
		return fmt.Sprintf("%s: NCCL appears to have fallen back to TCP: RDMA %s, %s %s, CPU PCIe %s, host memory %s; check NCCL_IB_DISABLE / NCCL_NET / NCCL_IB_HCA (and NCCL_SOCKET_IFNAME)",
			name, bps(v.rdma), nd, bps(rate), bps(v.cpuPCIe), bps(v.memory))
	case GPUDirectBounce:
		where := "the GPUs' and NICs' root ports"
		if !v.pathMapped {
			where = "the CPU root ports (not mapped to the GPUs and NICs)"
		}
		return fmt.Sprintf("%s: GPUDirect RDMA bounces through host memory: RDMA %s, device writes on %s %s (%.2f per RDMA byte), host memory %s; check nvidia-peermem (or DMA-BUF), NCCL_NET_GDR_LEVEL / NCCL_NET_GDR_READ, the GPU-NIC PCIe distance, ACS redirect and the IOMMU (rnic.topology.*)",
			name, bps(v.rdma), where, bps(v.pathWrite), v.pathWritePerRDMA(), bps(v.memory))
	case FabricCongestion:
		var parts []string
		for _, p := range v.ports {
			if p.marks > 0 && p.tx < p.rate {
				parts = append(parts, fmt.Sprintf("%s transmits %s, %s of its %s, %s of its packets ECN-marked or CNPs",
					p.device, bps(p.tx), pct(p.transmitLineShare()), bps(p.rate), pct(p.marksPerPacket())))
			}
		}
		return fmt.Sprintf("%s: fabric congestion: %s, host quiet; check the switch ports along the path (speed, queues, ECN/PFC configuration) and what else sends through them",
			name, strings.Join(parts, "; "))
	case Idle:
		return fmt.Sprintf("%s: idle: RDMA %s, IP %s, GPU PCIe %s", name, bps(v.rdma), bps(v.netdev), bps(v.gpu))
	case PFCStorm:
		p := portOf(v, device)
		return fmt.Sprintf("%s: PFC pause storm on %s (%s): paused %s of the time, %.0f pause frames/s; find the receiver that keeps pausing (a stuck host or NIC: tx pause storm events), check the switch's PFC watchdog",
			name, device, p.netdev, pct(p.pauseTime), p.pauseFrames)
	case LinkDegraded:
		if p := portOf(v, device); p.device != "" {
			return fmt.Sprintf("%s: %s runs at %s, below the %s it reached before; check the cable or transceiver and the switch port (ibstat, mlxlink), then reset the link",
				name, device, gbps(p.rate), gbps(p.peak))
		}
		if w, ok := v.gpuWidth[device]; ok && w[0] < w[1] {
			return fmt.Sprintf("%s: the PCIe link of %s trained to x%.0f of x%.0f; reseat the GPU, check the slot or riser (nvidia-smi -q, lspci -vv LnkSta)", name, device, w[0], w[1])
		}
		return fmt.Sprintf("%s: the PCIe link of %s trained below its capability (rnic.topology.link.width, .speed); reseat the card, check the slot or riser (lspci -vv LnkSta)", name, device)
	case GPUDirectNotReady:
		for bus, dev := range v.gpuByBus {
			if dev == device {
				device += " (" + bus + ")"
				break
			}
		}
		return fmt.Sprintf("%s: GPUDirect RDMA cannot work for %s: no NIC is on a PCIe path NCCL uses by default with peer memory, no ACS redirect and no translating IOMMU (rnic.topology.gpu_distance, peer_memory, acs_redirect, iommu say which); load nvidia-peermem, use a NIC on the GPU's PCIe switch, disable ACS redirect or set the IOMMU to passthrough",
			name, device)
	}
	return fmt.Sprintf("%s: %s", name, verdict)
}

func portOf(v *nodeView, device string) portView {
	for _, p := range v.ports {
		if p.device == device {
			return p
		}
	}
	return portView{}
}

func busiest(m map[string]float64) (string, float64) {
	name, best := "netdev", 0.0
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if m[k] > best {
			name, best = k, m[k]
		}
	}
	return name, best
}

// bps writes bytes/s in decimal units, as link rates are quoted.
func bps(x float64) string {
	switch {
	case math.IsNaN(x):
		return "?"
	case x >= 1e9:
		return fmt.Sprintf("%.1f GB/s", x/1e9)
	case x >= 1e6:
		return fmt.Sprintf("%.1f MB/s", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1f kB/s", x/1e3)
	}
	return fmt.Sprintf("%.0f B/s", x)
}

func gbps(bytesPerSecond float64) string {
	return fmt.Sprintf("%g Gb/s", math.Round(bytesPerSecond*8/1e9*10)/10)
}

func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "?"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}
