package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The same verdicts as Prometheus alerting rules, generated from the Config (thresholds, window,
// interval, hold) and the definition in evaluate.go: recording rules compute each quantity and
// ratio exactly as nodeView does (sums of irate over the window; a sum over no series is absent
// as nodeView's NaN is), and one alert per verdict fires when the connector's verdict would hold.
// examples/prometheus/iclens-diagnosis.rules.yaml and examples/kubernetes/prometheusrule.yaml are
// this output for the default Config (go test ./connector/diagnosisconnector -update).

// promNames are the Prometheus names of the receivers' metrics the rules read, as the prometheus
// and prometheusremotewrite exporters (and Prometheus' OTLP receiver with
// UnderscoreEscapingWithSuffixes) write them: unit and type suffixes, dots as underscores.
var promNames = map[string]string{
	nodestate.MetricIO:          "interconnect_io_bytes_total",
	nodestate.MetricPackets:     "rnic_packets_total",
	nodestate.MetricCNP:         "rnic_roce_cnp_total",
	nodestate.MetricECN:         "rnic_roce_ecn_marked_total",
	nodestate.MetricPFCFrames:   "rnic_pfc_pause_frames_total",
	nodestate.MetricPFCDuration: "rnic_pfc_pause_duration_microseconds_total",
	nodestate.MetricPauseFrames: "rnic_pause_frames_total",
	nodestate.MetricPortRate:    "rnic_port_rate_bytes_per_second",
	nodestate.MetricPortInfo:    "rnic_port_info",
	nodestate.MetricTopoReady:   "rnic_topology_gpudirect_ready",
	nodestate.MetricTopoDegrade: "rnic_topology_link_degraded",
	nodestate.MetricTopoNearest: "rnic_topology_nearest_rnic",
	nodestate.MetricGPUWidth:    "gpu_pcie_link_width",
	nodestate.MetricGPUMaxWidth: "gpu_pcie_link_max_width",
	nodestate.MetricGPUMaxGen:   "gpu_pcie_link_max_generation",
	nodestate.MetricGPUInfo:     "gpu_info",
	nodestate.MetricPCIeDevice:  "cpuuncore_pcie_device",
	nodestate.MetricXmitWait:    "rnic_port_xmit_wait_total",

	nodestate.MetricBurstPeak:      "rnic_burst_peak_rate_bytes_per_second",
	nodestate.MetricBurstTimeAbove: "rnic_burst_time_above_seconds_total",

	nodestate.MetricNVLinkLinkIO:     "gpu_nvlink_link_io_bytes_total",
	nodestate.MetricNVLinkLinkErrors: "gpu_nvlink_link_errors_total",

	nodestate.MetricCollBusBandwidth: "nccl_collective_last_bus_bandwidth_gigabytes_per_second",
	nodestate.MetricCollSamples:      "nccl_collective_samples_total",
	nodestate.MetricRASRanks:         "nccl_ras_ranks",
	nodestate.MetricRASOperations:    "nccl_ras_operations",
	nodestate.MetricOwner:            promOwner,
}

// nodeLabel is the label that names the node: resource attribute host.name.
const nodeLabel = "host_name"

// RuleFile is a Prometheus rule file.
type RuleFile struct {
	Groups []RuleGroup `yaml:"groups"`
}

// RuleGroup is one group of rules, evaluated in order at its interval.
type RuleGroup struct {
	Name     string `yaml:"name"`
	Interval string `yaml:"interval"`
	Rules    []Rule `yaml:"rules"`
}

// Rule is a recording or an alerting rule.
type Rule struct {
	Record      string            `yaml:"record,omitempty"`
	Alert       string            `yaml:"alert,omitempty"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for,omitempty"`
	Labels      map[string]string `yaml:"labels,omitempty"`
	Annotations map[string]string `yaml:"annotations,omitempty"`
}

// alertName is the alert of a verdict: IclensDiagnosisTCPFallback for tcp_fallback.
func alertName(name string) string {
	var b strings.Builder
	b.WriteString("IclensDiagnosis")
	for _, w := range strings.Split(name, "_") {
		switch w {
		case "tcp", "pfc":
			b.WriteString(strings.ToUpper(w))
		case "gpudirect":
			b.WriteString("GPUDirect")
		default:
			b.WriteString(strings.ToUpper(w[:1]) + w[1:])
		}
	}
	return b.String()
}

// Recorded series (the rules' own names, iclens_diagnosis:<what>).
const (
	recLine      = "iclens_diagnosis:line_rate_bytes"
	recPortRate  = "iclens_diagnosis:port_rate_bytes"
	recModelRate = "iclens_diagnosis:port_rate_bytes_by_model"
	recRDMA      = "iclens_diagnosis:rdma_bytes"
	recNetdev    = "iclens_diagnosis:netdev_bytes"
	recGPU       = "iclens_diagnosis:gpu_pcie_bytes"
	recGPUTx     = "iclens_diagnosis:gpu_pcie_transmit_bytes"
	recCPU       = "iclens_diagnosis:cpu_pcie_bytes"
	recCPUWrite  = "iclens_diagnosis:cpu_pcie_write_bytes"
	recMemory    = "iclens_diagnosis:cpu_memory_bytes"
	recPathStack = "iclens_diagnosis:path_stack"
	recPathWrite = "iclens_diagnosis:path_pcie_write_bytes"
	recNdFrames  = "iclens_diagnosis:netdev_pause_frames"
	recNdPause   = "iclens_diagnosis:netdev_pause_time_share"
	// recBurstTime is each port's share of time transmitting at or above congestion_burst_share
	// of its line rate (the rnic receiver's fast sampler).
	recBurstTime = "iclens_diagnosis:" + verdict.BurstTimeShare
)

// promFloat writes a threshold as PromQL reads it back exactly.
func promFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// recordedRatio is the recorded series of an evidence ratio.
func recordedRatio(ratio string) string { return "iclens_diagnosis:" + ratio }

// PrometheusRules returns the rules equivalent to cfg's verdicts.
func PrometheusRules(cfg *Config) RuleFile {
	t := cfg.Thresholds
	w := promDuration(cfg.Window)
	irate := func(metric, sel string) string {
		return fmt.Sprintf("irate(%s%s[%s])", promNames[metric], sel, w)
	}
	// A gauge is read as Prometheus reads it (its newest sample within the 5-minute lookback):
	// the receivers emit static facts (rnic.port.info, rates) at their slow cadence, not every
	// scrape.
	gauge := func(metric, sel string) string { return promNames[metric] + sel }
	sumBy := func(by, expr string) string { return fmt.Sprintf("sum by (%s) (%s)", by, expr) }
	node, port := nodeLabel, nodeLabel+", device"
	// A port is present while its traffic counters report (every scrape): its verdicts and
	// evidence end with them (README.md#devices-that-go-away).
	present := fmt.Sprintf(`count by (%s) (last_over_time(%s{component="rnic"}[%s]))`, port, promNames[nodestate.MetricIO], promDuration(cfg.Window-time.Millisecond))
	io := func(component string) string {
		return sumBy(node, irate(nodestate.MetricIO, fmt.Sprintf(`{component=%q}`, component)))
	}
	// netdev bytes from a port's netdev: device=<netdev> becomes netdev=<netdev>.
	asNetdev := func(expr string) string {
		return fmt.Sprintf(`label_replace(%s, "netdev", "$1", "device", "(.*)")`, expr)
	}
	// A netdev's value on each port it serves (rnic.port.info names the port's netdev).
	onPorts := func(rec string) string {
		return fmt.Sprintf("max by (%s) (%s * on (%s, netdev) group_right () (0 * max by (%s, netdev, device) (%s) + 1))",
			port, rec, node, node, gauge(nodestate.MetricPortInfo, ""))
	}
	orZero := func(expr, base string) string { return fmt.Sprintf("(%s) or 0 * %s", expr, base) }
	f := promFloat

	rules := []Rule{
		{Record: recPortRate, Expr: fmt.Sprintf("max by (%s) (%s) and on (%s) %s", port, gauge(nodestate.MetricPortRate, ""), port, present)},
		{Record: recLine, Expr: sumBy(node, recPortRate)},
		// Each port's rate beside its model (rnic.port.info hca_type): its peers on the node.
		{Record: recModelRate, Expr: fmt.Sprintf(`%s * on (%s) group_left (hca_type) max by (%s, hca_type) (%s)`,
			recPortRate, port, port, gauge(nodestate.MetricPortInfo, `{hca_type!=""}`))},
		{Record: recRDMA, Expr: io("rnic")},
		// A port without an IP netdev (InfiniBand) has 0 IP bytes.
		{Record: recNetdev, Expr: orZero(io("netdev"), recRDMA)},
		{Record: recGPU, Expr: io("gpu_pcie")},
		{Record: recGPUTx, Expr: sumBy(node, irate(nodestate.MetricIO, `{component="gpu_pcie",direction="transmit"}`)) + " or 0 * " + recGPU},
		{Record: recCPU, Expr: io("cpu_pcie")},
		{Record: recCPUWrite, Expr: sumBy(node, irate(nodestate.MetricIO, `{component="cpu_pcie",direction="receive"}`)) + " or 0 * " + recCPU},
		{Record: recMemory, Expr: io("cpu_memory")},
		// The root ports (IIO stacks) the GPUs and RDMA NICs sit behind.
		{Record: recPathStack, Expr: fmt.Sprintf(`count by (%s) (%s * on (%s, pci_bus_id) group_left () count by (%s, pci_bus_id) (%s))`,
			port, gauge(nodestate.MetricPCIeDevice, ""), node, node, gauge(nodestate.MetricIO, `{component=~"gpu_pcie|rnic",pci_bus_id!=""}`))},
		// Device -> host writes on those root ports; on every root port where none is mapped.
		{Record: recPathWrite, Expr: fmt.Sprintf("%s\nor\n(%s unless on (%s) %s)\nor\n0 * %s",
			sumBy(node, irate(nodestate.MetricIO, `{component="cpu_pcie",direction="receive"}`)+fmt.Sprintf(" * on (%s) group_left () (0 * %s + 1)", port, recPathStack)),
			sumBy(node, irate(nodestate.MetricIO, `{component="cpu_pcie",direction="receive"}`)), node, recPathStack, recCPU)},
		{Record: recNdFrames, Expr: fmt.Sprintf("sum by (%s, netdev) (%s)", node, asNetdev(irate(nodestate.MetricPFCFrames, "")+" or "+irate(nodestate.MetricPauseFrames, "")))},
		{Record: recNdPause, Expr: fmt.Sprintf("max by (%s, netdev) (sum by (%s, netdev, direction) (%s)) / 1e6", node, node, asNetdev(irate(nodestate.MetricPFCDuration, "")))},
		{Record: recBurstTime, Expr: sumBy(port, irate(nodestate.MetricBurstTimeAbove,
			fmt.Sprintf(`{component="rnic",direction="transmit",burst_share=%q}`, burstShareLabel(t.CongestionBurstShare))))},

		// The evidence ratios.
		{Record: recordedRatio(verdict.RDMAShare), Expr: fmt.Sprintf("%s / (%s + %s)", recRDMA, recRDMA, recNetdev)},
		{Record: recordedRatio(verdict.CPUPerNetwork), Expr: fmt.Sprintf("%s / (%s + %s)", recCPU, recRDMA, recNetdev)},
		{Record: recordedRatio(verdict.CPUWrite), Expr: fmt.Sprintf("%s / (%s + %s)", recCPUWrite, recRDMA, recNetdev)},
		{Record: recordedRatio(verdict.MemoryPerNetwork), Expr: fmt.Sprintf("%s / (%s + %s)", recMemory, recRDMA, recNetdev)},
		{Record: recordedRatio(verdict.NetworkLine), Expr: fmt.Sprintf("(%s + %s) / (2 * %s)", recRDMA, recNetdev, recLine)},
		{Record: recordedRatio(verdict.GPULine), Expr: fmt.Sprintf("%s / (2 * %s)", recGPU, recLine)},
		{Record: recordedRatio(verdict.PathWrite), Expr: fmt.Sprintf("%s / %s", recPathWrite, recRDMA)},
		// Per GPU byte (nodeView.unwatchedSockets).
		{Record: recordedRatio(verdict.CPUWritePerGPU), Expr: fmt.Sprintf("%s / %s", recCPUWrite, recGPU)},
		{Record: recordedRatio(verdict.MemoryPerGPU), Expr: fmt.Sprintf("%s / %s", recMemory, recGPU)},
		{Record: recordedRatio(verdict.GPUTransmitShare), Expr: fmt.Sprintf("%s / %s", recGPUTx, recGPU)},
		// The writes the IP traffic does not explain (nodeView.pathWriteBeyondIP).
		{Record: recordedRatio(verdict.PathWriteBeyondIP), Expr: fmt.Sprintf("clamp_min(%s - %s, 0) / %s", recPathWrite, recNetdev, recRDMA)},
		{Record: recordedRatio(verdict.TransmitLine), Expr: fmt.Sprintf("(%s) / %s",
			orZero(sumBy(port, irate(nodestate.MetricIO, `{component="rnic",direction="transmit"}`)), recPortRate), recPortRate)},
		{Record: recordedRatio(verdict.Marks), Expr: fmt.Sprintf("((%s) + (%s)) / (%s)",
			orZero(sumBy(port, irate(nodestate.MetricCNP, "")), recPortRate), orZero(sumBy(port, irate(nodestate.MetricECN, "")), recPortRate),
			orZero(sumBy(port, irate(nodestate.MetricPackets, "")), recPortRate))},
		{Record: recordedRatio(verdict.PauseFrames), Expr: fmt.Sprintf("(%s) / (%s * 8 / 1e9)", orZero(onPorts(recNdFrames), recPortRate), recPortRate)},
		{Record: recordedRatio(verdict.PauseTime), Expr: orZero(onPorts(recNdPause), recPortRate)},
	}

	r := func(ratio string) string { return recordedRatio(ratio) }
	storm := fmt.Sprintf("(%s >= %s) or (%s >= %s)", r(verdict.PauseTime), f(t.StormMinPauseTimeShare), r(verdict.PauseFrames), f(t.StormMinPauseFramesPerGbps))
	// Sustained (marks per packet), or in bursts (congestedInBursts): a port without the fast
	// sampler has no recBurstTime, and only the first holds for it.
	congested := fmt.Sprintf("((%[1]s < %[2]s) and (%[3]s >= %[4]s))\nor\n((%[1]s < %[2]s) and (%[5]s >= %[6]s) and ((%[3]s >= %[7]s) or (%[8]s >= %[9]s)))",
		r(verdict.TransmitLine), f(t.CongestionMaxLineShare), r(verdict.Marks), f(t.CongestionMinMarksPerPacket),
		recBurstTime, f(t.CongestionMinBurstTimeShare), f(t.CongestionBurstMinMarksPerPacket), r(verdict.PauseFrames), f(t.CongestionBurstMinPauseFramesPerGbps))
	busyNet := fmt.Sprintf("%s >= %s", r(verdict.NetworkLine), f(t.BusyLineShare))
	busyGPU := fmt.Sprintf("%s >= %s", r(verdict.GPULine), f(t.BusyLineShare))
	rdmaCarried := fmt.Sprintf("%s >= %s", r(verdict.RDMAShare), f(t.MinRDMAShare))
	quietPath := fmt.Sprintf("%s < %s", r(verdict.PathWriteBeyondIP), f(t.HealthyMaxPathWritePerRDMAByte))
	and := func(conds ...string) string {
		parts := make([]string, len(conds))
		for i, c := range conds {
			parts[i] = "(" + c + ")"
		}
		return strings.Join(parts, "\nand\n")
	}
	unless := func(expr string, sets ...string) string {
		for _, s := range sets {
			expr += fmt.Sprintf("\nunless on (%s)\n(%s)", node, s)
		}
		return expr
	}
	exprs := map[string]string{
		verdict.GPUDirectBounce: and(busyNet, rdmaCarried,
			fmt.Sprintf("%s >= %s", r(verdict.PathWriteBeyondIP), f(t.BounceMinPathWritePerRDMAByte)),
			fmt.Sprintf("%s >= %s", r(verdict.MemoryPerNetwork), f(t.BounceMinHostMemoryPerNetworkByte))),
		verdict.TCPFallback: and(busyNet, busyGPU,
			fmt.Sprintf("%s < %s", r(verdict.RDMAShare), f(t.FallbackMaxRDMAShare)),
			fmt.Sprintf("%s >= %s", r(verdict.CPUWrite), f(t.FallbackMinPCIeWritePerNetworkByte)),
			fmt.Sprintf("%s >= %s", r(verdict.MemoryPerNetwork), f(t.FallbackMinMemoryPerNetworkByte))) +
			// Or sockets over an interface no receiver watches (nodeView.unwatchedSockets).
			"\nor\n" + and(fmt.Sprintf("%s < %s", r(verdict.NetworkLine), f(t.BusyLineShare)), busyGPU,
			fmt.Sprintf("%s >= %s", r(verdict.CPUWritePerGPU), f(t.FallbackMinPCIeWritePerNetworkByte)),
			fmt.Sprintf("%s >= %s", r(verdict.MemoryPerGPU), f(t.FallbackMinMemoryPerNetworkByte)),
			fmt.Sprintf("%s >= %s", r(verdict.GPUTransmitShare), f(t.UnwatchedMinGPUTransmitShare))),
		verdict.FabricCongestion: unless(fmt.Sprintf("count by (%s) (%s)\nand on (%s)\n(%s)\nand on (%s)\n(%s)", node, congested, node, rdmaCarried, node, quietPath), storm),
		verdict.HealthyGPUDirect: unless(and(busyNet, busyGPU, rdmaCarried, quietPath), congested, storm),
		verdict.Idle: unless(and(fmt.Sprintf("%s < %s", r(verdict.NetworkLine), f(t.BusyLineShare)), fmt.Sprintf("%s < %s", r(verdict.GPULine), f(t.BusyLineShare))),
			congested, storm),
		verdict.PFCStorm: storm,
		verdict.LinkDegraded: fmt.Sprintf("(%s < max by (%s) (max_over_time(%s[%s])))\nor\n(max by (%s) (%s < on (%s, hca_type) group_left () max by (%s, hca_type) (%s)))\nor\n(max by (%s) (%s) == 1)\nor\n(max by (%s) (%s) < max by (%s) (%s))",
			recPortRate, port, promNames[nodestate.MetricPortRate], promDuration(cfg.PortRateMemory),
			port, recModelRate, node, node, recModelRate,
			port, gauge(nodestate.MetricTopoDegrade, ""),
			port, gauge(nodestate.MetricGPUWidth, ""), port, gauge(nodestate.MetricGPUMaxWidth, "")) +
			"\nor\n" + nvlinkDegradedExpr(t, node, irate),
		// Per GPU by PCI address, reported on the gpu receiver's device for that address
		// (gpu.info), on the address itself where no gpu.info names it (nodestate.GPU.Name).
		verdict.GPUDirectNotReady: fmt.Sprintf("max by (%[1]s) (\n"+
			"  label_replace(%[3]s, \"pci_bus_id\", \"$1\", \"gpu_pci_bus_id\", \"(.*)\")\n"+
			"    * on (%[2]s, pci_bus_id) group_left (device) (0 * max by (%[2]s, pci_bus_id, device) (%[4]s) + 1)\n"+
			"  or\n"+
			"  label_replace(%[3]s unless on (%[2]s, gpu_pci_bus_id) label_replace(%[4]s, \"gpu_pci_bus_id\", \"$1\", \"pci_bus_id\", \"(.*)\"), \"device\", \"$1\", \"gpu_pci_bus_id\", \"(.*)\")\n"+
			") == 0",
			port, node, fmt.Sprintf("max by (%s, gpu_pci_bus_id) (%s)", node, gauge(nodestate.MetricTopoReady, "")), gauge(nodestate.MetricGPUInfo, "")),
	}
	collectiveRules(cfg, &rules, exprs, present)
	stragglerRules(cfg, exprs)
	peerRules(&rules, exprs)
	hold := ""
	if cfg.Hold > 1 {
		hold = promDuration(time.Duration(cfg.Hold-1) * cfg.Interval)
	}
	for _, v := range verdict.Names() {
		if !cfg.enabled(v) {
			continue
		}
		sev := "warning"
		if v == verdict.HealthyGPUDirect || v == verdict.Idle {
			sev = "info"
		}
		rules = append(rules, Rule{
			Alert: alertName(v), Expr: exprs[v], For: hold,
			Labels: map[string]string{"verdict": v, "severity": sev},
			Annotations: map[string]string{
				"summary":     alertSummary[v],
				"description": "connector/diagnosisconnector/README.md#" + strings.ReplaceAll(v, "_", "-"),
			},
		})
	}
	return RuleFile{Groups: []RuleGroup{{Name: "iclens-diagnosis", Interval: promDuration(cfg.Interval), Rules: append(rules, ownerRules(cfg, rules)...)}}}
}

var alertSummary = map[string]string{
	verdict.HealthyGPUDirect:  "{{ $labels.host_name }}: healthy GPUDirect RDMA",
	verdict.TCPFallback:       "{{ $labels.host_name }}: NCCL appears to have fallen back to TCP; check NCCL_IB_DISABLE / NCCL_NET / NCCL_IB_HCA",
	verdict.GPUDirectBounce:   "{{ $labels.host_name }}: GPUDirect RDMA bounces through host memory; check nvidia-peermem, NCCL_NET_GDR_LEVEL, the GPU-NIC PCIe path, ACS and IOMMU",
	verdict.FabricCongestion:  "{{ $labels.host_name }}: fabric congestion: RDMA transmit below half the line rate with ECN marks / CNPs (or, in bursts at line rate, pauses), host quiet",
	verdict.PFCStorm:          "{{ $labels.host_name }} {{ $labels.device }}: PFC pause storm",
	verdict.LinkDegraded:      "{{ $labels.host_name }} {{ $labels.device }}: link below its capability",
	verdict.GPUDirectNotReady: "{{ $labels.host_name }} {{ $labels.device }}: GPUDirect RDMA cannot work for this GPU (topology, peer memory, ACS or IOMMU)",
	verdict.Idle:              "{{ $labels.host_name }}: idle",
	verdict.CollectiveSlow:    "{{ $labels.host_name }} {{ $labels.device }}: NCCL collective's bus bandwidth well below what the node's path carries; the node's other alerts say which component explains it",
	verdict.CollectiveStalled: "{{ $labels.host_name }} {{ $labels.device }}: NCCL communicator stalled: RAS reports failed ranks, or its operation count stopped while another's advances",
	verdict.Straggler:         "{{ $labels.host_name }} {{ $labels.device }}: the straggler of its NCCL communicator: its bus bandwidth far above the next node's, whose ranks wait for this node's; check its GPUs' clocks and throttling, its CPU and its data loading",
	verdict.WaitsOnPeer:       "{{ $labels.host_name }} waits on {{ $labels.device }}: no fault of its own, and a node of its job or NCCL communicator has one; fix that node first",
}

// promDuration writes d as Prometheus writes durations (1m30s, 500ms).
func promDuration(d time.Duration) string {
	if d%time.Second != 0 {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	s := int64(d / time.Second)
	var b strings.Builder
	if h := s / 3600; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m := s % 3600 / 60; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec := s % 60; sec > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}

const generatedHeader = "# Generated by connector/diagnosisconnector from its default configuration (the same\n" +
	"# thresholds the connector evaluates; README.md there says why each is what it is). Do not edit:\n" +
	"# go test ./connector/diagnosisconnector -update rewrites this file.\n"

// YAML is the rule file, as examples/prometheus/iclens-diagnosis.rules.yaml holds it.
func (f RuleFile) YAML() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(generatedHeader)
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(f); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}

// PrometheusRuleYAML is the rule file as a Prometheus Operator PrometheusRule in namespace ns.
func (f RuleFile) PrometheusRuleYAML(ns string) ([]byte, error) {
	obj := map[string]any{
		"apiVersion": "monitoring.coreos.com/v1",
		"kind":       "PrometheusRule",
		"metadata": map[string]any{
			"name":      "otelcol-iclens-diagnosis",
			"namespace": ns,
			"labels":    map[string]string{"app.kubernetes.io/name": "otelcol-iclens"},
		},
		"spec": f,
	}
	var b bytes.Buffer
	b.WriteString(generatedHeader)
	b.WriteString("# Needs the Prometheus Operator's CRDs: kubectl apply -f prometheusrule.yaml\n")
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(obj); err != nil {
		return nil, err
	}
	return b.Bytes(), enc.Close()
}
