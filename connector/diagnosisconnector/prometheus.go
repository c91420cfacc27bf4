package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The same verdicts as Prometheus alerting rules, generated from the Config (thresholds, window,
// interval, hold) and the definition in evaluate.go: recording rules compute each quantity and
// ratio exactly as nodeView does (sums of irate over the window; a sum over no series is absent
// as nodeView's NaN is), and one alert per verdict fires when the connector's verdict would hold.
// examples/prometheus/iclens-diagnosis.rules.yaml and examples/kubernetes/prometheusrule.yaml are
// this output for the default Config (go test ./connector/diagnosisconnector -update).

// PromNames are the Prometheus names of the receivers' metrics the rules read, as the prometheus
// and prometheusremotewrite exporters (and Prometheus' OTLP receiver with
// UnderscoreEscapingWithSuffixes) write them: unit and type suffixes, dots as underscores.
var PromNames = map[string]string{
	mInterconnectIO:       "interconnect_io_bytes_total",
	mPackets:              "rnic_packets_total",
	mCNP:                  "rnic_roce_cnp_total",
	mECN:                  "rnic_roce_ecn_marked_total",
	mPFCFrames:            "rnic_pfc_pause_frames_total",
	mPFCDuration:          "rnic_pfc_pause_duration_microseconds_total",
	mPauseFrames:          "rnic_pause_frames_total",
	mPortRate:             "rnic_port_rate_bytes_per_second",
	mPortInfo:             "rnic_port_info",
	mGPUDirectReady:       "rnic_topology_gpudirect_ready",
	mTopoDegraded:         "rnic_topology_link_degraded",
	mGPULinkWidth:         "gpu_pcie_link_width",
	mGPULinkMaxWidth:      "gpu_pcie_link_max_width",
	mGPUInfo:              "gpu_info",
	mPCIeDevice:           "cpuuncore_pcie_device",
	"rnic.port.xmit_wait": "rnic_port_xmit_wait_total",
}

// NodeLabel is the label that names the node: resource attribute host.name.
const NodeLabel = "host_name"

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

// AlertName is the alert of a verdict: IclensDiagnosisTCPFallback for tcp_fallback.
func AlertName(verdict string) string {
	var b strings.Builder
	b.WriteString("IclensDiagnosis")
	for _, w := range strings.Split(verdict, "_") {
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
	recRDMA      = "iclens_diagnosis:rdma_bytes"
	recNetdev    = "iclens_diagnosis:netdev_bytes"
	recGPU       = "iclens_diagnosis:gpu_pcie_bytes"
	recCPU       = "iclens_diagnosis:cpu_pcie_bytes"
	recCPUWrite  = "iclens_diagnosis:cpu_pcie_write_bytes"
	recMemory    = "iclens_diagnosis:cpu_memory_bytes"
	recPathStack = "iclens_diagnosis:path_stack"
	recPathWrite = "iclens_diagnosis:path_pcie_write_bytes"
	recNdFrames  = "iclens_diagnosis:netdev_pause_frames"
	recNdPause   = "iclens_diagnosis:netdev_pause_time_share"
)

// RecordedRatio is the recorded series of an evidence ratio.
func RecordedRatio(ratio string) string { return "iclens_diagnosis:" + ratio }

// PrometheusRules returns the rules equivalent to cfg's verdicts.
func PrometheusRules(cfg *Config) RuleFile {
	t := cfg.Thresholds
	w := promDuration(cfg.Window)
	irate := func(metric, sel string) string {
		return fmt.Sprintf("irate(%s%s[%s])", PromNames[metric], sel, w)
	}
	sumBy := func(by, expr string) string { return fmt.Sprintf("sum by (%s) (%s)", by, expr) }
	node, port := NodeLabel, NodeLabel+", device"
	io := func(component string) string {
		return sumBy(node, irate(mInterconnectIO, fmt.Sprintf(`{component=%q}`, component)))
	}
	// netdev bytes from a port's netdev: device=<netdev> becomes netdev=<netdev>.
	asNetdev := func(expr string) string {
		return fmt.Sprintf(`label_replace(%s, "netdev", "$1", "device", "(.*)")`, expr)
	}
	// A netdev's value on each port it serves (rnic.port.info names the port's netdev).
	onPorts := func(rec string) string {
		return fmt.Sprintf("max by (%s) (%s * on (%s, netdev) group_right () (0 * max by (%s, netdev, device) (%s) + 1))",
			port, rec, node, node, PromNames[mPortInfo])
	}
	orZero := func(expr, base string) string { return fmt.Sprintf("(%s) or 0 * %s", expr, base) }
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

	rules := []Rule{
		{Record: recLine, Expr: sumBy(node, PromNames[mPortRate])},
		{Record: recPortRate, Expr: fmt.Sprintf("max by (%s) (%s)", port, PromNames[mPortRate])},
		{Record: recRDMA, Expr: io("rnic")},
		// A port without an IP netdev (InfiniBand) has 0 IP bytes.
		{Record: recNetdev, Expr: orZero(io("netdev"), recRDMA)},
		{Record: recGPU, Expr: io("gpu_pcie")},
		{Record: recCPU, Expr: io("cpu_pcie")},
		{Record: recCPUWrite, Expr: sumBy(node, irate(mInterconnectIO, `{component="cpu_pcie",direction="receive"}`)) + " or 0 * " + recCPU},
		{Record: recMemory, Expr: io("cpu_memory")},
		// The root ports (IIO stacks) the GPUs and RDMA NICs sit behind.
		{Record: recPathStack, Expr: fmt.Sprintf(`count by (%s) (%s * on (%s, pci_bus_id) group_left () count by (%s, pci_bus_id) (%s{component=~"gpu_pcie|rnic",pci_bus_id!=""}))`,
			port, PromNames[mPCIeDevice], node, node, PromNames[mInterconnectIO])},
		// Device -> host writes on those root ports; on every root port where none is mapped.
		{Record: recPathWrite, Expr: fmt.Sprintf("%s\nor\n(%s unless on (%s) %s)\nor\n0 * %s",
			sumBy(node, irate(mInterconnectIO, `{component="cpu_pcie",direction="receive"}`)+fmt.Sprintf(" * on (%s) group_left () (0 * %s + 1)", port, recPathStack)),
			sumBy(node, irate(mInterconnectIO, `{component="cpu_pcie",direction="receive"}`)), node, recPathStack, recCPU)},
		{Record: recNdFrames, Expr: fmt.Sprintf("sum by (%s, netdev) (%s)", node, asNetdev(irate(mPFCFrames, "")+" or "+irate(mPauseFrames, "")))},
		{Record: recNdPause, Expr: fmt.Sprintf("max by (%s, netdev) (sum by (%s, netdev, direction) (%s)) / 1e6", node, node, asNetdev(irate(mPFCDuration, "")))},

		// The evidence ratios.
		{Record: RecordedRatio(rRDMAShare), Expr: fmt.Sprintf("%s / (%s + %s)", recRDMA, recRDMA, recNetdev)},
		{Record: RecordedRatio(rCPUPerNetwork), Expr: fmt.Sprintf("%s / (%s + %s)", recCPU, recRDMA, recNetdev)},
		{Record: RecordedRatio(rCPUWrite), Expr: fmt.Sprintf("%s / (%s + %s)", recCPUWrite, recRDMA, recNetdev)},
		{Record: RecordedRatio(rMemoryPerNetwork), Expr: fmt.Sprintf("%s / (%s + %s)", recMemory, recRDMA, recNetdev)},
		{Record: RecordedRatio(rNetworkLine), Expr: fmt.Sprintf("(%s + %s) / (2 * %s)", recRDMA, recNetdev, recLine)},
		{Record: RecordedRatio(rGPULine), Expr: fmt.Sprintf("%s / (2 * %s)", recGPU, recLine)},
		{Record: RecordedRatio(rPathWrite), Expr: fmt.Sprintf("%s / %s", recPathWrite, recRDMA)},
		{Record: RecordedRatio(rTransmitLine), Expr: fmt.Sprintf("(%s) / %s",
			orZero(sumBy(port, irate(mInterconnectIO, `{component="rnic",direction="transmit"}`)), recPortRate), recPortRate)},
		{Record: RecordedRatio(rMarks), Expr: fmt.Sprintf("((%s) + (%s)) / (%s)",
			orZero(sumBy(port, irate(mCNP, "")), recPortRate), orZero(sumBy(port, irate(mECN, "")), recPortRate),
			orZero(sumBy(port, irate(mPackets, "")), recPortRate))},
		{Record: RecordedRatio(rPauseFrames), Expr: fmt.Sprintf("(%s) / (%s * 8 / 1e9)", orZero(onPorts(recNdFrames), recPortRate), recPortRate)},
		{Record: RecordedRatio(rPauseTime), Expr: orZero(onPorts(recNdPause), recPortRate)},
	}

	r := func(ratio string) string { return RecordedRatio(ratio) }
	storm := fmt.Sprintf("(%s >= %s) or (%s >= %s)", r(rPauseTime), f(t.StormMinPauseTimeShare), r(rPauseFrames), f(t.StormMinPauseFramesPerGbps))
	congested := fmt.Sprintf("(%s < %s) and (%s >= %s)", r(rTransmitLine), f(t.CongestionMaxLineShare), r(rMarks), f(t.CongestionMinMarksPerPacket))
	busyNet := fmt.Sprintf("%s >= %s", r(rNetworkLine), f(t.BusyLineShare))
	busyGPU := fmt.Sprintf("%s >= %s", r(rGPULine), f(t.BusyLineShare))
	rdmaCarried := fmt.Sprintf("%s >= %s", r(rRDMAShare), f(t.MinRDMAShare))
	quietPath := fmt.Sprintf("%s < %s", r(rPathWrite), f(t.HealthyMaxPathWritePerRDMAByte))
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
		GPUDirectBounce: and(busyNet, rdmaCarried,
			fmt.Sprintf("%s >= %s", r(rPathWrite), f(t.BounceMinPathWritePerRDMAByte)),
			fmt.Sprintf("%s >= %s", r(rMemoryPerNetwork), f(t.BounceMinHostMemoryPerNetworkByte))),
		TCPFallback: and(busyNet, busyGPU,
			fmt.Sprintf("%s < %s", r(rRDMAShare), f(t.FallbackMaxRDMAShare)),
			fmt.Sprintf("%s >= %s", r(rCPUWrite), f(t.FallbackMinPCIeWritePerNetworkByte)),
			fmt.Sprintf("%s >= %s", r(rMemoryPerNetwork), f(t.FallbackMinMemoryPerNetworkByte))),
		FabricCongestion: unless(fmt.Sprintf("count by (%s) (%s)\nand on (%s)\n(%s)\nand on (%s)\n(%s)", node, congested, node, rdmaCarried, node, quietPath), storm),
		HealthyGPUDirect: unless(and(busyNet, busyGPU, rdmaCarried, quietPath), congested, storm),
		Idle: unless(and(fmt.Sprintf("%s < %s", r(rNetworkLine), f(t.BusyLineShare)), fmt.Sprintf("%s < %s", r(rGPULine), f(t.BusyLineShare))),
			congested, storm),
		PFCStorm: storm,
		LinkDegraded: fmt.Sprintf("(%s < max by (%s) (max_over_time(%s[%s])))\nor\n(max by (%s) (%s) == 1)\nor\n(max by (%s) (%s) < max by (%s) (%s))",
			recPortRate, port, PromNames[mPortRate], promDuration(cfg.PortRateMemory),
			port, PromNames[mTopoDegraded],
			port, PromNames[mGPULinkWidth], port, PromNames[mGPULinkMaxWidth]),
		// Per GPU by PCI address, reported on the gpu receiver's device for that address
		// (gpu.info), on the address itself where no gpu.info names it (nodeView.gpuName).
		GPUDirectNotReady: fmt.Sprintf("max by (%[1]s) (\n"+
			"  label_replace(%[3]s, \"pci_bus_id\", \"$1\", \"gpu_pci_bus_id\", \"(.*)\")\n"+
			"    * on (%[2]s, pci_bus_id) group_left (device) (0 * max by (%[2]s, pci_bus_id, device) (%[4]s) + 1)\n"+
			"  or\n"+
			"  label_replace(%[3]s unless on (%[2]s, gpu_pci_bus_id) label_replace(%[4]s, \"gpu_pci_bus_id\", \"$1\", \"pci_bus_id\", \"(.*)\"), \"device\", \"$1\", \"gpu_pci_bus_id\", \"(.*)\")\n"+
			") == 0",
			port, node, fmt.Sprintf("max by (%s, gpu_pci_bus_id) (%s)", node, PromNames[mGPUDirectReady]), PromNames[mGPUInfo]),
	}
	hold := ""
	if cfg.Hold > 1 {
		hold = promDuration(time.Duration(cfg.Hold-1) * cfg.Interval)
	}
	for _, v := range Verdicts() {
		if !cfg.Enabled(v) {
			continue
		}
		sev := "warning"
		if v == HealthyGPUDirect || v == Idle {
			sev = "info"
		}
		rules = append(rules, Rule{
			Alert: AlertName(v), Expr: exprs[v], For: hold,
			Labels: map[string]string{"verdict": v, "severity": sev},
			Annotations: map[string]string{
				"summary":     alertSummary[v],
				"description": "connector/diagnosisconnector/README.md#" + strings.ReplaceAll(v, "_", "-"),
			},
		})
	}
	return RuleFile{Groups: []RuleGroup{{Name: "iclens-diagnosis", Interval: promDuration(cfg.Interval), Rules: rules}}}
}

var alertSummary = map[string]string{
	HealthyGPUDirect:  "{{ $labels.host_name }}: healthy GPUDirect RDMA",
	TCPFallback:       "{{ $labels.host_name }}: NCCL appears to have fallen back to TCP; check NCCL_IB_DISABLE / NCCL_NET / NCCL_IB_HCA",
	GPUDirectBounce:   "{{ $labels.host_name }}: GPUDirect RDMA bounces through host memory; check nvidia-peermem, NCCL_NET_GDR_LEVEL, the GPU-NIC PCIe path, ACS and IOMMU",
	FabricCongestion:  "{{ $labels.host_name }}: fabric congestion: RDMA transmit below half the line rate with ECN marks / CNPs, host quiet",
	PFCStorm:          "{{ $labels.host_name }} {{ $labels.device }}: PFC pause storm",
	LinkDegraded:      "{{ $labels.host_name }} {{ $labels.device }}: link below its capability",
	GPUDirectNotReady: "{{ $labels.host_name }} {{ $labels.device }}: GPUDirect RDMA cannot work for this GPU (topology, peer memory, ACS or IOMMU)",
	Idle:              "{{ $labels.host_name }}: idle",
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
