package diagnosisconnector

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// A node with three GPUs, as the receivers report it: the rnic receiver's topology names each GPU
// by its PCI address (gpu.pci.bus_id; receiver/rnicreceiver's TestTopologyGPUsByBusID), the gpu
// receiver by DCGM id with the address on gpu.info. The AMD Instinct at 0000:06:00.0, first in PCI
// order, is no GPU DCGM sees, so the NVIDIA GPU that DCGM calls 0 is the second GPU in PCI order:
// an ordinal over PCI order called it gpu1, the gpu receiver's name for the other NVIDIA GPU.
// Here 0000:13:00.0 (gpu0) has no NIC it could use, 0000:33:00.0 (gpu1) is ready but trained to
// x8, and the AMD GPU is not ready either.
func mixedNodePoints() []scenario.Point {
	g := func(metric string, v float64, attrs ...string) scenario.Point {
		p := scenario.Point{Metric: metric, Value: v, Attrs: map[string]string{}}
		for i := 0; i < len(attrs); i += 2 {
			p.Attrs[attrs[i]] = attrs[i+1]
		}
		return p
	}
	ready := func(bus, nic string, v float64) scenario.Point {
		return g("rnic.topology.gpudirect_ready", v, "gpu.pci.bus_id", bus, "device", nic, "gpudirect.reason", map[bool]string{true: "ready", false: "pcie_path"}[v == 1])
	}
	return []scenario.Point{
		g("gpu.info", 1, "device", "gpu0", "pci.bus_id", "0000:13:00.0"),
		g("gpu.info", 1, "device", "gpu1", "pci.bus_id", "0000:33:00.0"),
		g("gpu.pcie.link.width", 16, "device", "gpu0"), g("gpu.pcie.link.max_width", 16, "device", "gpu0"),
		g("gpu.pcie.link.width", 8, "device", "gpu1"), g("gpu.pcie.link.max_width", 16, "device", "gpu1"),
		ready("0000:06:00.0", "mlx5_0", 0),
		ready("0000:13:00.0", "mlx5_0", 0),
		ready("0000:13:00.0", "mlx5_1", 0),
		ready("0000:33:00.0", "mlx5_1", 1),
	}
}

// mixedNodeVerdicts: each GPU's topology verdict lands on the gpu receiver's name for that GPU
// (joined by PCI address), on the address where no gpu.info names the GPU; gpu1's link verdict
// is its own, and gpu1 is not called not-ready for gpu0's topology.
var mixedNodeVerdicts = []string{
	scenario.On(verdict.GPUDirectNotReady, "0000:06:00.0"),
	scenario.On(verdict.GPUDirectNotReady, "gpu0"),
	scenario.On(verdict.LinkDegraded, "gpu1"),
}

func TestGPUVerdictsJoinByBusID(t *testing.T) {
	e := newTestEngine(t, testConfig())
	start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	var got, sentences []string
	for i := range 3 {
		at := start.Add(time.Duration(i) * e.cfg.Interval)
		// gpu0 idles at Gen1 of Gen4 with all its lanes: not a degraded link.
		pts := append(mixedNodePoints(),
			scenario.Point{Metric: "gpu.pcie.link.generation", Value: 1, Attrs: map[string]string{"device": "gpu0"}},
			scenario.Point{Metric: "gpu.pcie.link.max_generation", Value: 4, Attrs: map[string]string{"device": "gpu0"}})
		e.ingest(toMetrics("mixed", "", pts, at), at)
		md, ld := e.evaluate(at.Add(10 * time.Millisecond))
		got = holdingOf(md, "mixed")
		for _, r := range records([]plog.Logs{ld}) {
			sentences = append(sentences, r.Body().AsString())
		}
	}
	assert.Equal(t, mixedNodeVerdicts, got)
	assert.Contains(t, strings.Join(sentences, "\n"), "GPUDirect RDMA cannot work for gpu0 (0000:13:00.0)", "the operator's sentence names the GPU both ways")
}

// TestPromtoolGPUVerdictsJoinByBusID: the generated rules make the same join.
func TestPromtoolGPUVerdictsJoinByBusID(t *testing.T) {
	bin := promtool(t)
	cfg := createDefaultConfig()
	rules := PrometheusRules(cfg)
	pt := promtoolTest{Name: "mixed", Interval: promDuration(cfg.Interval)}
	for _, p := range mixedNodePoints() {
		pt.InputSeries = append(pt.InputSeries, inputSeries{Series: promSeries(p, "mixed"), Values: expand([]float64{p.Value, p.Value, p.Value, p.Value, p.Value, p.Value})})
	}
	expected := map[string][]expAlert{}
	for _, r := range rules.Groups[0].Rules {
		if r.Alert == "" {
			continue
		}
		expected[r.Alert] = []expAlert{}
		for _, v := range mixedNodeVerdicts {
			verdict, device, _ := strings.Cut(v, "@")
			if alertName(verdict) != r.Alert {
				continue
			}
			labels := map[string]string{nodeLabel: "mixed", "verdict": verdict, "severity": r.Labels["severity"], "device": device}
			expected[r.Alert] = append(expected[r.Alert], expAlert{ExpLabels: labels, ExpAnnotations: expandAnnotations(r.Annotations, labels)})
		}
	}
	for _, r := range rules.Groups[0].Rules {
		if r.Alert != "" {
			pt.AlertRuleTest = append(pt.AlertRuleTest, alertRuleTest{EvalTime: promDuration(4 * cfg.Interval), Alertname: r.Alert, ExpAlerts: expected[r.Alert]})
		}
	}
	runPromtoolTest(t, bin, cfg.Interval, rules, pt)
}
