package diagnosisconnector

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// A communicator's path is its GPU's: the NIC the rnic receiver's topology names nearest to that
// GPU (the NIC NCCL gives its rank), capped by the GPU's own PCIe link, not the node's fastest
// port. pathVariant is nccl_slow_no_hardware_cause's node (one A100 PCIe, Gen4 x16, its
// ConnectX-6 Dx mlx5_0 at 100 Gb/s on the GPU's switch, healthy GPUDirect RDMA) changed as
// the hardware of a variant is.
type pathVariant struct {
	name string
	// busBW is the AllReduce's bus bandwidth (GB/s, the Inspector's coll_busbw_gbs).
	busBW float64
	// fastPort adds a 400 Gb/s ConnectX-7 (mlx5_1, another model) on another root port that
	// no GPU is nearest to: another job's NIC, idle.
	fastPort bool
	// nicGbps sets mlx5_0's rate; gpuGen the GPU's highest PCIe generation (0 keeps Gen4).
	nicGbps float64
	gpuGen  float64
	// noTopology leaves out rnic.topology.nearest_rnic (the receiver's topology turned off).
	noTopology bool

	slow  bool
	share float64
	// says is what the slow collective's sentence says the path carries.
	says string
}

var pathVariants = []pathVariant{
	// 10 GB/s is 80 % of mlx5_0's 12.5 GB/s; over the node's fastest port it would be 20 %.
	{name: "its_own_nic", busBW: 10, fastPort: true, share: 0.8},
	{name: "slow_on_its_nic", busBW: 4, fastPort: true, slow: true, share: 0.32, says: "32 % of what mlx5_0/1 can carry (12.5 GB/s)"},
	// A 400 Gb/s NIC (50 GB/s) beside a Gen3 x16 GPU link (15.75 GB/s): the link limits.
	{name: "gpu_link_limits", busBW: 10, nicGbps: 400, gpuGen: 3, share: 10 / 15.753846},
	{name: "slow_on_gpu_link", busBW: 4, nicGbps: 400, gpuGen: 3, slow: true, share: 4 / 15.753846, says: "25 % of what the PCIe link of gpu0 can carry (15.8 GB/s)"},
	// Without the topology nothing says which NIC the GPU uses: the node's fastest port.
	{name: "no_topology", busBW: 10, fastPort: true, noTopology: true, slow: true, share: 0.2, says: "20 % of what mlx5_1/1 can carry (50.0 GB/s)"},
}

// stream is the variant's steady stream of samples points a sample.
func (pv pathVariant) stream(t *testing.T, samples int) [][]scenario.Point {
	c := caseNamed(t, "nccl_slow_no_hardware_cause")
	out := c.SteadyStream(0, samples, 1)
	for i, pts := range out {
		var keep []scenario.Point
		for _, p := range pts {
			switch {
			case p.Metric == "nccl.collective.last_bus_bandwidth":
				p.Value = pv.busBW
			case p.Metric == "rnic.port.rate" && pv.nicGbps > 0:
				p.Value = pv.nicGbps * 1e9 / 8
			case p.Metric == "gpu.pcie.link.max_generation" && pv.gpuGen > 0:
				p.Value = pv.gpuGen
			case p.Metric == "rnic.topology.nearest_rnic" && pv.noTopology:
				continue
			}
			keep = append(keep, p)
		}
		if pv.fastPort {
			const port, bus = "mlx5_1/1", "0000:3f:00.0"
			for _, dir := range []string{"transmit", "receive"} {
				keep = append(keep, scenario.Point{Metric: "interconnect.io", Counter: true, Value: float64(i) * 1e6,
					Attrs: map[string]string{"component": "rnic", "direction": dir, "device": port, "pci.bus_id": bus}})
			}
			keep = append(keep,
				scenario.Point{Metric: "rnic.port.rate", Value: 400e9 / 8, Attrs: map[string]string{"device": port}},
				// ConnectX-7 (MT4129), not the ConnectX-6 Dx's model: no peer of mlx5_0.
				scenario.Point{Metric: "rnic.port.info", Value: 1, Attrs: map[string]string{"device": port, "netdev": "ens2f0np0", "hca_type": "MT4129"}})
		}
		out[i] = keep
	}
	return out
}

// TestCollectivePathIsItsGPUs: the connector judges each variant's AllReduce against its GPU's
// path, says which component limits it, and reports the share as evidence.
func TestCollectivePathIsItsGPUs(t *testing.T) {
	c := caseNamed(t, "nccl_slow_no_hardware_cause")
	device := scenario.CommID(c) + "/AllReduce"
	for _, pv := range pathVariants {
		t.Run(pv.name, func(t *testing.T) {
			e := newTestEngine(t, testConfig())
			var slow bool
			var share float64
			var sentences []string
			for i, pts := range pv.stream(t, 8) {
				at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
				e.ingest(toMetrics("n", c.Name, pts, at), at)
				md, ld := e.evaluate(at.Add(10 * time.Millisecond))
				slow = strings.Contains(strings.Join(holdingOf(md, "n"), " "), scenario.On(verdict.CollectiveSlow, device))
				var ok bool
				share, ok = evidencePoint(md, "n", verdict.CollectivePathShare, device)
				require.True(t, ok, "sample %d: the path share is evidence", i)
				for _, r := range records([]plog.Logs{ld}) {
					sentences = append(sentences, r.Body().AsString())
				}
			}
			assert.Equal(t, pv.slow, slow, "collective_slow")
			assert.InDelta(t, pv.share, share, 1e-6, "collective_path_share")
			if pv.says != "" {
				assert.Contains(t, strings.Join(sentences, "\n"), fmt.Sprintf("AllReduce on comm %s (gpu0) at %.1f GB/s bus bandwidth, %s", scenario.CommID(c), pv.busBW, pv.says))
			}
		})
	}
}

// TestPromtoolCollectivePathIsItsGPUs: the generated rules judge every variant as the connector
// does (promtool test rules, the alert at the last sample).
func TestPromtoolCollectivePathIsItsGPUs(t *testing.T) {
	bin := promtool(t)
	cfg := createDefaultConfig()
	rules := PrometheusRules(cfg)
	c := caseNamed(t, "nccl_slow_no_hardware_cause")
	name := alertName(verdict.CollectiveSlow)
	var annotations map[string]string
	for _, r := range rules.Groups[0].Rules {
		if r.Alert == name {
			annotations = r.Annotations
		}
	}
	const samples = 8
	var tests []promtoolTest
	for _, pv := range pathVariants {
		pt := promtoolTest{Name: pv.name, Interval: promDuration(cfg.Interval), InputSeries: inputSeriesOf(pv.stream(t, samples), "n")}
		want := []expAlert{}
		if pv.slow {
			labels := map[string]string{nodeLabel: "n", "device": scenario.CommID(c) + "/AllReduce", "verdict": verdict.CollectiveSlow, "severity": rulesSeverity(rules, name)}
			want = append(want, expAlert{ExpLabels: labels, ExpAnnotations: expandAnnotations(annotations, labels)})
		}
		pt.AlertRuleTest = append(pt.AlertRuleTest, alertRuleTest{EvalTime: promDuration((samples - 1) * cfg.Interval), Alertname: name, ExpAlerts: want})
		tests = append(tests, pt)
	}
	assert.Contains(t, runPromtoolTest(t, bin, cfg.Interval, rules, tests...), "SUCCESS")
}
