package dashboard

import (
	"fmt"
	"strings"
)

// nodeVerdicts are the diagnosis connector's verdicts on a node's traffic (device ""), coded for
// the state timeline; 0 is "no verdict fits" (connector/diagnosisconnector/README.md).
var nodeVerdicts = []state{
	{1, "healthy GPUDirect", "green"},
	{2, "TCP fallback", "red"},
	{3, "GPUDirect bounce", "purple"},
	{4, "fabric congestion", "orange"},
	{5, "idle", "blue"},
}

var nodeVerdictNames = []string{"healthy_gpudirect", "tcp_fallback", "gpudirect_bounce", "fabric_congestion", "idle"}

// verdicts is the top row: what the diagnosis connector (or the generated Prometheus rules) says
// each node is doing, its device verdicts, and the evidence ratios the verdicts are decided on.
func (g *gen) verdicts() {
	g.row("Diagnosis: the verdict per node")

	// One band per node: the code of the node-level verdict that holds (at most one does).
	parts := make([]string, len(nodeVerdictNames))
	for i, v := range nodeVerdictNames {
		parts[i] = fmt.Sprintf(`(diagnosis_verdict_ratio{host_name=~"$node", device="", verdict=%q} * %d)`, v, i+1)
	}
	maps := valueMap(append([]state{{0, "no verdict", "transparent"}}, nodeVerdicts...)...)
	g.add(g.stateTimeline("Verdict per node",
		"The diagnosis connector's verdict on each node's traffic (diagnosis.verdict, device \"\"): healthy GPUDirect RDMA, NCCL's TCP fallback, GPUDirect RDMA bouncing through host memory, fabric congestion, idle. Empty: no verdict fits (a pause storm stalls the node, or a change is half seen). The generated Prometheus rules raise the same verdicts as ALERTS{verdict=...}.",
		16, 8, maps,
		target{expr: `max by (host_name) (` + strings.Join(parts, " or ") + `)`, legend: "{{host_name}}"}))
	g.add(g.stateTimeline("Device verdicts",
		"Verdicts on one device: pfc_storm on a port, link_degraded on a port, NIC or GPU, gpudirect_not_ready on a GPU, collective_slow and collective_stalled on an NCCL communicator (diagnosis.verdict with a device); across nodes, where a gateway diagnoses every node: straggler on a communicator's collective type, waits_on_peer with the peer node as the device. A band while the verdict holds.",
		8, 8, valueMap(state{0, "", "transparent"}, state{1, "holds", "red"}),
		target{expr: `diagnosis_verdict_ratio{host_name=~"$node", device!=""} == 1`, legend: "{{host_name}} {{device}} {{verdict}}"}))

	g.add(g.timeSeries("Evidence per node",
		"The ratios the node's verdict is decided on (diagnosis.evidence): RDMA share of the network bytes (about 1 with RDMA, 0 after a TCP fallback), CPU PCIe and host memory bytes per network byte (near 0 with GPUDirect, 2 and more when the bytes cross the host), device-to-host writes on the GPUs' and NICs' root ports per RDMA byte (0 healthy, 0.5-1 in a bounce), network and GPU PCIe bytes as a share of the line rate.",
		"none", 12, 8,
		target{expr: `diagnosis_evidence_ratio{host_name=~"$node", device=""}`, legend: "{{host_name}} {{ratio}}"}))
	g.add(g.timeSeries("Evidence per port",
		"Per RDMA port: RDMA transmit as a share of the port's rate, ECN marks and CNPs per packet (congestion above 0.001 while below half the line rate), share of time paused and pause frames per Gb/s (a pause storm).",
		"none", 12, 8,
		target{expr: `diagnosis_evidence_ratio{host_name=~"$node", device!=""}`, legend: "{{host_name}} {{device}} {{ratio}}"}))
}
