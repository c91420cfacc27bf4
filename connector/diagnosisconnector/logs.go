package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// logChanges appends one record per verdict change of node n: its traffic verdict when a new one
// holds (previous_verdict the one before), a device verdict when it starts and when it clears
// (verdict "" then). It returns how many records it appended.
func (e *engine) logChanges(ld plog.Logs, n *node, v *nodeView, ev map[verdictKey]float64, holding map[verdictKey]bool, ts pcommon.Timestamp) int {
	var recs []logRecord
	for _, nv := range verdict.NodeVerdicts() {
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
		return 0
	}
	sl := nodeScopeLogs(ld, n)
	for _, r := range recs {
		if e.capture != nil && faultVerdict(r.verdict) {
			e.raised = append(e.raised, r.body)
		}
		a := appendRecord(sl, r, ts).Attributes()
		// The evidence the verdict was decided on: the node's ratios, and the device's own.
		for k, x := range ev {
			if k.device == "" || k.device == r.device {
				a.PutDouble(k.verdict, x)
			}
		}
	}
	return len(recs)
}

type logRecord struct {
	verdict, previous, device, body string
}

// nodeScopeLogs appends the node's resource and the connector's scope to ld.
func nodeScopeLogs(ld plog.Logs, n *node) plog.ScopeLogs {
	rl := ld.ResourceLogs().AppendEmpty()
	n.Resource.CopyTo(rl.Resource().Attributes())
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName(metadata.ScopeName)
	return sl
}

// appendRecord appends r: WARN for a fault, INFO for healthy, idle and a cleared device verdict.
func appendRecord(sl plog.ScopeLogs, r logRecord, ts pcommon.Timestamp) plog.LogRecord {
	lr := sl.LogRecords().AppendEmpty()
	lr.SetTimestamp(ts)
	lr.SetObservedTimestamp(ts)
	if r.verdict == "" || r.verdict == verdict.HealthyGPUDirect || r.verdict == verdict.Idle {
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
	} else {
		lr.SetSeverityNumber(plog.SeverityNumberWarn)
		lr.SetSeverityText("WARN")
	}
	lr.Body().SetStr(r.body)
	a := lr.Attributes()
	a.PutStr(verdict.AttrVerdict, r.verdict)
	a.PutStr(verdict.AttrPrevious, r.previous)
	a.PutStr(verdict.AttrDevice, r.device)
	return lr
}

func nodeName(n *node) string {
	if n.Name == "" {
		return "this node"
	}
	return n.Name
}

// sentence is what an operator reads: what the node is doing, the figures, what to check.
func sentence(which, device string, n *node, v *nodeView) string {
	name := nodeName(n)
	switch which {
	case verdict.CollectiveSlow, verdict.CollectiveStalled:
		return collectiveSentence(which, device, name, v)
	case verdict.WaitsOnPeer:
		return peerSentence(name, device, v)
	case verdict.Straggler:
		return stragglerSentence(name, device, v)
	case verdict.HealthyGPUDirect:
		s := fmt.Sprintf("%s: healthy GPUDirect RDMA: RDMA %s, GPU PCIe %s, root-port writes %s of the RDMA bytes",
			name, bps(v.rdma), bps(v.gpu), pct(v.pathWriteBeyondIP()))
		if nd, rate := busiest(v.Netdevs); rate >= v.rdma*0.05 {
			s += fmt.Sprintf(" beyond the IP traffic (%s %s: checkpoints, data loading)", nd, bps(rate))
		}
		var bursts []string
		for _, p := range v.Ports {
			if b := burstPhrase(p); b != "" {
				bursts = append(bursts, p.Device+" "+b)
			}
		}
		if len(bursts) > 0 {
			s += "; in bursts: " + strings.Join(bursts, "; ")
		}
		return s
	case verdict.TCPFallback:
		if v.unwatched {
			return fmt.Sprintf("%s: NCCL appears to run over sockets on an interface no receiver watches: RDMA %s and the watched netdevs %s, while the GPUs move %s and the host writes %.2f bytes into memory per GPU byte (CPU PCIe %s, host memory %s): a socket transport's bytes; check NCCL_IB_DISABLE / NCCL_NET / NCCL_SOCKET_IFNAME, and watch that interface (the rnic receiver reports RDMA NICs' netdevs only)",
				name, bps(v.rdma), bps(v.netdev), bps(v.gpu), v.cpuWritePerGPU(), bps(v.cpuPCIe), bps(v.memory))
		}
		nd, rate := busiest(v.Netdevs)
		return fmt.Sprintf("%s: NCCL appears to have fallen back to TCP: RDMA %s, %s %s, CPU PCIe %s, host memory %s; check NCCL_IB_DISABLE / NCCL_NET / NCCL_IB_HCA (and NCCL_SOCKET_IFNAME)",
			name, bps(v.rdma), nd, bps(rate), bps(v.cpuPCIe), bps(v.memory))
	case verdict.GPUDirectBounce:
		where := "the GPUs' and NICs' root ports"
		if !v.PathMapped {
			where = "the CPU root ports (not mapped to the GPUs and NICs)"
		}
		return fmt.Sprintf("%s: GPUDirect RDMA bounces through host memory: RDMA %s, device writes on %s %s (%.2f per RDMA byte beyond the IP traffic), host memory %s; check nvidia-peermem (or DMA-BUF), NCCL_NET_GDR_LEVEL / NCCL_NET_GDR_READ, the GPU-NIC PCIe distance, ACS redirect and the IOMMU (rnic.topology.*)",
			name, bps(v.rdma), where, bps(v.PathWrite), v.pathWriteBeyondIP(), bps(v.memory))
	case verdict.FabricCongestion:
		var parts []string
		for _, p := range v.Ports {
			if (p.Marks > 0 || p.PauseFrames > 0) && p.Tx < p.Rate {
				part := fmt.Sprintf("%s transmits %s, %s of its %s", p.Device, bps(p.Tx), pct(transmitLineShare(p)), bps(p.Rate))
				if b := burstPhrase(p); b != "" {
					part += " on average, " + b + ": its queues fill in every burst"
				}
				if p.Marks > 0 {
					part += fmt.Sprintf(", %s of its packets ECN-marked or CNPs", pctFine(marksPerPacket(p)))
				}
				if p.PauseFrames > 0 {
					part += fmt.Sprintf(", %s paused %.0f frames/s", p.Netdev, p.PauseFrames)
				}
				parts = append(parts, part)
			}
		}
		return fmt.Sprintf("%s: fabric congestion: %s, host quiet; check the switch ports along the path (speed, queues, ECN/PFC configuration) and what else sends through them",
			name, strings.Join(parts, "; "))
	case verdict.Idle:
		return fmt.Sprintf("%s: idle: RDMA %s, IP %s, GPU PCIe %s", name, bps(v.rdma), bps(v.netdev), bps(v.gpu))
	case verdict.PFCStorm:
		p, _ := v.Port(device)
		return fmt.Sprintf("%s: PFC pause storm on %s (%s): paused %s of the time, %.0f pause frames/s; find the receiver that keeps pausing (a stuck host or NIC: tx pause storm events), check the switch's PFC watchdog",
			name, device, p.Netdev, pct(p.PauseTime), p.PauseFrames)
	case verdict.LinkDegraded:
		if s, ok := nvlinkSentence(name, device, v); ok {
			return s
		}
		if p, ok := v.Port(device); ok {
			below := fmt.Sprintf("the %s it reached before", gbps(v.peaks[device]))
			if p.PeerRate > v.peaks[device] {
				below = fmt.Sprintf("the %s another %s port of this node runs at", gbps(p.PeerRate), p.HCAType)
			}
			return fmt.Sprintf("%s: %s runs at %s, below %s; check the cable or transceiver and the switch port (ibstat, mlxlink), then reset the link",
				name, device, gbps(p.Rate), below)
		}
		if g, ok := v.GPU(device); ok {
			if d, _ := g.LinkDegraded(); d {
				return fmt.Sprintf("%s: the PCIe link of %s trained to x%.0f of x%.0f; reseat the GPU, check the slot or riser (nvidia-smi -q, lspci -vv LnkSta)", name, device, g.Width, g.MaxWidth)
			}
		}
		return fmt.Sprintf("%s: the PCIe link of %s trained below its capability (rnic.topology.link.width, .speed); reseat the card, check the slot or riser (lspci -vv LnkSta)", name, device)
	case verdict.GPUDirectNotReady:
		if g, ok := v.GPU(device); ok && g.Bus != "" && g.Bus != device {
			device += " (" + g.Bus + ")"
		}
		return fmt.Sprintf("%s: GPUDirect RDMA cannot work for %s: no NIC is on a PCIe path NCCL uses by default with peer memory, no ACS redirect and no translating IOMMU (rnic.topology.gpu_distance, peer_memory, acs_redirect, iommu say which); load nvidia-peermem, use a NIC on the GPU's PCIe switch, disable ACS redirect or set the IOMMU to passthrough",
			name, device)
	}
	return fmt.Sprintf("%s: %s", name, which)
}

// burstPhrase says how a port's transmit bursts ran (the rnic receiver's fast sampler): the
// highest share of its line rate it spent time at or above, how much of the time, and its peak
// window rate ("at ≥90 % of its line 30 % of the time (peak 12.5 GB/s over 10ms)"); "" where the
// port has no fast sampler or reached none of its shares.
func burstPhrase(p nodestate.Port) string {
	best, label := -1.0, ""
	for k, at := range p.TxAbove {
		if x, err := strconv.ParseFloat(k, 64); err == nil && x > best && at > 0 {
			best, label = x, k
		}
	}
	at := p.TxAbove[label]
	if best < 0 {
		return ""
	}
	return fmt.Sprintf("at ≥%s of its line %s of the time (peak %s over %s)", pct(best), pct(at), bps(p.TxPeak), p.PeakWindow)
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

// pctFine is pct with the digits a share below 0.1 % needs (a burst's few marks: 0.024%).
func pctFine(x float64) string {
	if x > 0 && x < 0.001 {
		return fmt.Sprintf("%.3f%%", 100*x)
	}
	return pct(x)
}

func pct(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "?"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}
