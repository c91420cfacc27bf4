package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"
	"strings"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// nvlinkDevice names one NVLink link of a GPU in a verdict: gpu0/nvlink3 (the generated rules
// join the device and link labels the same way, prometheus.go).
func nvlinkDevice(gpu, link string) string { return gpu + "/nvlink" + link }

// nvlinkConditions decides link_degraded for each NVLink link of a GPU that reports its links
// (the gpu receiver's opt-in gpu.nvlink.link.io and .errors): a link left out while its peers
// carry traffic (nodestate.GPU.IdleNVLinks), or one whose data-link errors climb. Every link the
// GPU reports gets its condition, so that a verdict on a link ends when the link is well again.
func nvlinkConditions(t Thresholds, g nodestate.GPU, out map[verdictKey]bool) {
	idle := map[string]bool{}
	for _, l := range g.IdleNVLinks(t.NVLinkIdleShare, t.NVLinkBusyBytesPerSecond) {
		idle[l.Link] = true
	}
	for _, l := range g.NVLinks {
		out[verdictKey{verdict.LinkDegraded, nvlinkDevice(g.Name, l.Link)}] = idle[l.Link] || l.Errors >= t.NVLinkMaxErrorsPerSecond
	}
}

// nvlinkSentence says what is wrong with a GPU's NVLink link, device being nvlinkDevice's name;
// ok is false for any other device. It gives the link's bytes against its busiest peer's and its
// errors, whichever of the two conditions (nvlinkConditions) raised it.
func nvlinkSentence(name, device string, v *nodeView) (string, bool) {
	gpuName, link, found := strings.Cut(device, "/nvlink")
	if !found {
		return "", false
	}
	g, ok := v.GPU(gpuName)
	if !ok {
		return "", false
	}
	var this nodestate.NVLink
	var top float64
	for _, l := range g.NVLinks {
		top = max(top, l.Rate)
		if l.Link == link {
			this = l
		}
	}
	s := fmt.Sprintf("%s: NVLink %s of %s carries %s while its busiest peer link carries %s", name, link, gpuName, bps(this.Rate), bps(top))
	if this.Errors > 0 {
		s += fmt.Sprintf(", with %.1f data-link errors/s (CRC, replay, recovery; nvidia-smi nvlink -e -i)", this.Errors)
	}
	return s + "; a link left out or erring is down, trained out or failing: check nvidia-smi nvlink -s -i, reset the GPU, then reseat the board or NVSwitch tray", true
}

// nvlinkDegradedExpr is nvlinkConditions in PromQL, for the link_degraded rule: per GPU and link
// the bytes of both directions (and the errors of every kind) summed, a link below idle share of
// its GPU's busiest link while that one carries at least the busy rate, or erring at the error
// rate; the device label becomes nvlinkDevice's gpu0/nvlink3.
func nvlinkDegradedExpr(t Thresholds, node string, irate func(metric, sel string) string) string {
	perLink := func(metric string) string {
		return fmt.Sprintf("sum by (%s, device, link) (%s)", node, irate(metric, ""))
	}
	asLink := func(expr string) string {
		return fmt.Sprintf("max by (%s, device) (label_join(%s, \"device\", \"/nvlink\", \"device\", \"link\"))", node, expr)
	}
	bytes := perLink(nodestate.MetricNVLinkLinkIO)
	idle := fmt.Sprintf("%s\n  < on (%s, device) group_left ()\n  (%s * (max by (%s, device) (%s) >= %s))",
		bytes, node, promFloat(t.NVLinkIdleShare), node, bytes, promFloat(t.NVLinkBusyBytesPerSecond))
	erring := fmt.Sprintf("%s >= %s", perLink(nodestate.MetricNVLinkLinkErrors), promFloat(t.NVLinkMaxErrorsPerSecond))
	return asLink(idle) + "\nor\n" + asLink(erring)
}
