package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The per-owner rules (README.md#per-owner-verdicts): the node-level verdicts evaluated over each
// pod's or job's own bytes, as the connector's per_owner evaluates them (owners.go). Each owned
// instance is joined to its owner on (host_name, component, pci_bus_id), the README's join, an IIO
// stack's total (pci_bus_id "") to the single owner of every device cpuuncore.pcie.device maps
// behind it; every ratio and alert is then the node's, over owner-labelled series.

// ownerLabels are the owner's labels (the owner receiver's attributes, as Prometheus names them).
const ownerLabels = "owner_kind, job_id, k8s_namespace_name, k8s_pod_name"

// The per-owner rules' own recorded series.
const (
	ownerPrefix    = "iclens_diagnosis_owner:"
	recOwnedDevice = ownerPrefix + "device"
	recOwnedBus    = ownerPrefix + "bus"
	recOwnedStack  = ownerPrefix + "stack"
	recOwnedPort   = ownerPrefix + "port"
)

// ownerRules returns the per-owner rules, derived from the node's (rules): the node's ratio rules
// and traffic alerts read the owner's recorded series instead, grouped by the owner too. They go
// in the node's group, after its rules: a group's rules are evaluated in order, so an owner's
// rules read the node's series of the same evaluation (separate groups run on their own timers).
func ownerRules(cfg *Config, rules []Rule) []Rule {
	w := promDuration(cfg.Window)
	io := promNames[nodestate.MetricIO]
	node, owner := nodeLabel, nodeLabel+", "+ownerLabels
	irate := func(sel string) string { return fmt.Sprintf("irate(%s%s[%s])", io, sel, w) }
	// An owned instance's series, with its owner's labels.
	join := func(expr string) string {
		return fmt.Sprintf("%s * on (%s, component, pci_bus_id) group_left (%s) %s", expr, node, ownerLabels, recOwnedDevice)
	}
	// CPU PCIe: a root port the owner receiver keys by its address, or an IIO stack's total.
	cpuJoin := func(sel string) string {
		stackSel := strings.TrimSuffix(sel, "}") + `,pci_bus_id=""}`
		return fmt.Sprintf("(%s or %s * on (%s, device) group_left (%s) (0 * %s + 1))",
			join(irate(sel)), irate(stackSel), node, ownerLabels, recOwnedStack)
	}
	sumBy := func(expr string) string { return fmt.Sprintf("sum by (%s) (%s)", owner, expr) }
	onOwnedPorts := func(rec string) string {
		return fmt.Sprintf("%s * on (%s, device) group_left (%s) (0 * %s + 1)", rec, node, ownerLabels, recOwnedPort)
	}
	stackDevices := fmt.Sprintf("%s * on (%s, pci_bus_id) group_left (%s) %s", promNames[nodestate.MetricPCIeDevice], node, ownerLabels, recOwnedBus)
	o := func(rec string) string { return strings.Replace(rec, "iclens_diagnosis:", ownerPrefix, 1) }

	out := []Rule{
		// 1 for each instance a pod or job owns now (0 once when the ownership ended).
		{Record: recOwnedDevice, Expr: fmt.Sprintf(`max by (%s, component, pci_bus_id, %s) (%s{owner_kind=~"pod|job"} == 1)`, node, ownerLabels, promOwner)},
		{Record: recOwnedBus, Expr: fmt.Sprintf(`max by (%s, pci_bus_id, %s) (%s{component=~"gpu_pcie|rnic"})`, node, ownerLabels, recOwnedDevice)},
		// A stack is an owner's when every device behind it is that owner's.
		{Record: recOwnedStack, Expr: fmt.Sprintf("count by (%[1]s, device, %[2]s) (%[3]s)\nand on (%[1]s, device) (count by (%[1]s, device) (count by (%[1]s, device, %[2]s) (%[3]s)) == 1)\nunless on (%[1]s, device) (%[4]s unless on (%[1]s, pci_bus_id) %[5]s)",
			node, ownerLabels, stackDevices, promNames[nodestate.MetricPCIeDevice], recOwnedBus)},
		// An RDMA port is its NIC's owner's (the owner receiver keys the NIC's PCI function).
		{Record: recOwnedPort, Expr: fmt.Sprintf("max by (%s, device, %s) (%s)", node, ownerLabels, join(fmt.Sprintf(`last_over_time(%s{component="rnic"}[%s])`, io, w)))},
		{Record: o(recLine), Expr: sumBy(onOwnedPorts(recPortRate))},
		{Record: o(recRDMA), Expr: sumBy(join(irate(`{component="rnic"}`)))},
		{Record: o(recNetdev), Expr: fmt.Sprintf("(%s) or 0 * %s", sumBy(join(irate(`{component="netdev"}`))), o(recRDMA))},
		{Record: o(recGPU), Expr: sumBy(join(irate(`{component="gpu_pcie"}`)))},
		{Record: o(recGPUTx), Expr: fmt.Sprintf("(%s) or 0 * %s", sumBy(join(irate(`{component="gpu_pcie",direction="transmit"}`))), o(recGPU))},
		{Record: o(recCPU), Expr: sumBy(cpuJoin(`{component="cpu_pcie"}`))},
		{Record: o(recCPUWrite), Expr: fmt.Sprintf("(%s) or 0 * %s", sumBy(cpuJoin(`{component="cpu_pcie",direction="receive"}`)), o(recCPU))},
		// An owner's path is its own root ports and stacks: its CPU PCIe writes.
		{Record: o(recPathWrite), Expr: o(recCPUWrite)},
		// Host memory is the node's: nothing in its counters says whose.
		{Record: o(recMemory), Expr: fmt.Sprintf("0 * %s + on (%s) group_left () %s", o(recRDMA), node, recMemory)},
	}
	// Its ports' ratios, their time at line rate in bursts among them, which its congestion reads
	// as the node's does.
	portRatios := map[string]bool{verdict.TransmitLine: true, verdict.Marks: true, verdict.PauseTime: true, verdict.PauseFrames: true,
		verdict.BurstTimeShare: true}
	for _, r := range []string{verdict.TransmitLine, verdict.Marks, verdict.PauseTime, verdict.PauseFrames, verdict.BurstTimeShare} {
		out = append(out, Rule{Record: o(recordedRatio(r)), Expr: onOwnedPorts(recordedRatio(r))})
	}
	// The node's ratios and traffic alerts over the owner's series, grouped by the owner too.
	byOwner := func(expr string) string {
		expr = strings.ReplaceAll(expr, "iclens_diagnosis:", ownerPrefix)
		return strings.ReplaceAll(expr, "("+node+")", "("+owner+")")
	}
	traffic := map[string]bool{}
	for _, v := range verdict.NodeVerdicts() {
		traffic[alertName(v)] = true
	}
	for _, r := range rules {
		switch {
		case r.Record != "" && strings.HasPrefix(r.Record, "iclens_diagnosis:") && verdict.IsRatio(strings.TrimPrefix(r.Record, "iclens_diagnosis:")) &&
			!portRatios[strings.TrimPrefix(r.Record, "iclens_diagnosis:")]:
			out = append(out, Rule{Record: o(r.Record), Expr: byOwner(r.Expr)})
		case r.Alert != "" && traffic[r.Alert]:
			a := Rule{Alert: ownerAlertName(r.Alert), Expr: byOwner(r.Expr), For: r.For, Labels: r.Labels, Annotations: map[string]string{}}
			for k, v := range r.Annotations {
				a.Annotations[k] = v
			}
			a.Annotations["summary"] = ownerSummary(r.Annotations["summary"])
			a.Annotations["description"] = "connector/diagnosisconnector/README.md#per-owner-verdicts"
			out = append(out, a)
		}
	}
	return out
}

// promOwner is the owner receiver's info series in Prometheus (unit {info} adds no suffix).
const promOwner = "interconnect_owner"

// ownerAlertName is an owner's alert: IclensDiagnosisOwnerGPUDirectBounce beside the node's
// IclensDiagnosisGPUDirectBounce, so that a node's alert count stays the node's.
func ownerAlertName(nodeAlert string) string {
	return "IclensDiagnosisOwner" + strings.TrimPrefix(nodeAlert, "IclensDiagnosis")
}

// ownerSummary says the node's summary of the owner: "node1 job 4711: ...".
func ownerSummary(nodeSummary string) string {
	const host = "{{ $labels.host_name }}:"
	return "{{ $labels.host_name }} {{ $labels.owner_kind }} {{ if $labels.job_id }}{{ $labels.job_id }}{{ else }}{{ $labels.k8s_namespace_name }}/{{ $labels.k8s_pod_name }}{{ end }}:" +
		strings.TrimPrefix(nodeSummary, host)
}
