package simulate

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"
)

func caseNamed(t *testing.T, name string) scenario.Case {
	for _, c := range NCCLCases() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no case %s", name)
	return scenario.Case{}
}

type dumped struct {
	Header struct {
		ID     string `json:"id"`
		Rank   int    `json:"rank"`
		NRanks int    `json:"n_ranks"`
	} `json:"header"`
	CollPerf struct {
		Coll   string  `json:"coll"`
		SN     uint64  `json:"coll_sn"`
		Bytes  uint64  `json:"coll_msg_size_bytes"`
		ExecUs uint64  `json:"coll_exec_time_us"`
		AlgoBw float64 `json:"coll_algobw_gbs"`
		BusBw  float64 `json:"coll_busbw_gbs"`
	} `json:"coll_perf"`
}

func parseDump(t *testing.T, s string) []dumped {
	var out []dumped
	for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		var d dumped
		require.NoError(t, json.Unmarshal([]byte(l), &d), l)
		out = append(out, d)
	}
	return out
}

// TestInspectorDumpFollowsModel: the bus bandwidth of the simulated ring is the rate the model's
// transport carries the step at (11.5 GB/s over 100 Gb/s RoCE at 92 %, 2.8 GB/s over the socket
// transport), the algorithm bandwidth is the bus bandwidth over 2(N-1)/N, and a record is written
// only for a dump interval in which an operation completed, with coll_sn counting them.
func TestInspectorDumpFollowsModel(t *testing.T) {
	for name, want := range map[string]struct {
		op    string
		busbw float64
	}{
		"healthy_allreduce": {"AllReduce", 100e9 / 8 * 0.92 / 1e9},
		"tcp_fallback":      {"AllReduce", 2.8},
		"healthy_broadcast": {"Broadcast", 100e9 / 8 * 0.92 / 1e9},
	} {
		t.Run(name, func(t *testing.T) {
			c := caseNamed(t, name)
			recs := parseDump(t, InspectorDump(c, 0, 60, time.Second, time.Time{}))
			require.NotEmpty(t, recs)
			// More than one operation a second completes (scenario.OpsPerStep a step): one record
			// every dump interval, the latest.
			assert.Equal(t, 60, len(recs), "one record per dump interval")
			var last uint64
			for _, r := range recs {
				assert.Equal(t, want.op, r.CollPerf.Coll)
				assert.Equal(t, uint64(scenario.MessageBytes), r.CollPerf.Bytes)
				assert.InDelta(t, want.busbw, r.CollPerf.BusBw, want.busbw*1e-6)
				factor := scenario.BusBwFactor(want.op, scenario.GPUs)
				assert.InDelta(t, r.CollPerf.BusBw/factor, r.CollPerf.AlgoBw, 1e-5)
				assert.Greater(t, r.CollPerf.SN, last)
				last = r.CollPerf.SN
				assert.Equal(t, 2, r.Header.NRanks)
			}
		})
	}
	assert.Equal(t, 1.0, scenario.BusBwFactor("AllReduce", 2))
	assert.Equal(t, 1.75, scenario.BusBwFactor("AllReduce", 8))
	assert.Equal(t, 0.875, scenario.BusBwFactor("AllGather", 8))
	assert.Equal(t, 0.875, scenario.BusBwFactor("ReduceScatter", 8))
	assert.Equal(t, 1.0, scenario.BusBwFactor("Broadcast", 8))
}

// TestInspectorPromTextFollowsModel: the textfile mode says the same bus bandwidth as the JSON
// records, in the bucket label inspector_prom.cc gives the model's 260 MB (247.96 MiB: "247-248MB").
func TestInspectorPromTextFollowsModel(t *testing.T) {
	c := caseNamed(t, "tcp_fallback")
	var text string
	for i := 0; i < 10 && text == ""; i++ {
		text = InspectorPromText(c, 0, i, time.Second)
	}
	require.NotEmpty(t, text, "an operation completes within 10 s")
	assert.Contains(t, text, `collective="AllReduce",message_size="247-248MB",algo_proto="Ring_simple"} 2.8`+"\n")
	assert.Contains(t, text, "nccl_collective_exec_time_microseconds{")
	assert.Equal(t, "", InspectorPromText(caseNamed(t, "tcp_fallback"), 0, 0, time.Millisecond), "no operation completes in 1 ms")
}

// TestRASStatusCountsSteps: the RAS document of a case counts the same operations as its dumps.
func TestRASStatusCountsSteps(t *testing.T) {
	c := caseNamed(t, "healthy_allreduce")
	var doc struct {
		Communicators []struct {
			Hash  string `json:"hash"`
			Ranks []struct {
				Counts map[string]uint64 `json:"collective_counts"`
			} `json:"ranks"`
		} `json:"communicators"`
	}
	require.NoError(t, json.Unmarshal([]byte(RASStatus(c, 59, time.Second)), &doc))
	require.Len(t, doc.Communicators, 1)
	assert.Equal(t, commID(c), doc.Communicators[0].Hash)
	recs := parseDump(t, InspectorDump(c, 0, 60, time.Second, time.Time{}))
	assert.Equal(t, recs[len(recs)-1].CollPerf.SN, doc.Communicators[0].Ranks[0].Counts["AllReduce"])
}

// TestNCCLDumpsReplayThroughReceiver reads the written dumps with the nccl receiver: every record
// taken, the bus-bandwidth histogram's mean the model's rate.
func TestNCCLDumpsReplayThroughReceiver(t *testing.T) {
	dir := t.TempDir()
	dirs, err := WriteNCCL(Options{Dir: dir, Interval: time.Second, Samples: 30})
	require.NoError(t, err)
	require.Len(t, dirs, len(scenario.Cases())+len(scenario.NCCLCases()))
	c := caseNamed(t, "tcp_fallback")
	dump := filepath.Join(dir, c.Name, "nccl")
	b, err := os.ReadFile(filepath.Join(dump, scenario.HostName(c, "node1")+"-pid4100.log"))
	require.NoError(t, err)
	want := len(parseDump(t, string(b))) * 2 // both nodes

	f := ncclreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*ncclreceiver.Config)
	cfg.Inspector.DumpDir = dump
	cfg.Inspector.PollInterval = 10 * time.Millisecond
	cfg.RAS.Endpoint = ""
	cfg.CollectionInterval, cfg.InitialDelay = 20*time.Millisecond, 0
	sink := new(consumertest.MetricsSink)
	r, err := f.CreateMetrics(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	defer func() { require.NoError(t, r.Shutdown(context.Background())) }()

	var count uint64
	var sum float64
	require.Eventually(t, func() bool {
		all := sink.AllMetrics()
		if len(all) == 0 {
			return false
		}
		count, sum = histogram(all[len(all)-1], "nccl.collective.bus_bandwidth")
		return int(count) == want
	}, 30*time.Second, 10*time.Millisecond, "every record of both nodes in the bus-bandwidth histogram")
	assert.InDelta(t, 2.8, sum/float64(count), 1e-5)
}

func histogram(md pmetric.Metrics, name string) (uint64, float64) {
	var count uint64
	var sum float64
	for _, m := range metrictest.Metrics(md, name) {
		for p := 0; p < m.Histogram().DataPoints().Len(); p++ {
			dp := m.Histogram().DataPoints().At(p)
			count += dp.Count()
			sum += dp.Sum()
		}
	}
	return count, sum
}

// TestNCCLCasesFollowModel: the slow case's job runs at the 4 GB/s of its model over a healthy
// port, and once node2's rank dies in nccl_rank_dies RAS reports it dead and the counts stop.
func TestNCCLCasesFollowModel(t *testing.T) {
	recs := parseDump(t, InspectorDump(caseNamed(t, "nccl_slow_no_hardware_cause"), 0, 10, time.Second, time.Time{}))
	require.NotEmpty(t, recs)
	assert.InDelta(t, 4.0, recs[0].CollPerf.BusBw, 1e-6)

	c := caseNamed(t, "nccl_rank_dies")
	type status struct {
		Communicators []struct {
			Ranks []struct {
				Counts map[string]uint64 `json:"collective_counts"`
			} `json:"ranks"`
			Missing []struct {
				Rank   int `json:"rank"`
				Status struct {
					Dead bool `json:"considered_dead"`
				} `json:"status"`
			} `json:"missing_ranks"`
		} `json:"communicators"`
	}
	at := func(i int) status {
		var s status
		require.NoError(t, json.Unmarshal([]byte(RASStatus(c, i, time.Second)), &s))
		require.Len(t, s.Communicators, 1)
		return s
	}
	before, after, later := at(scenario.TransitionFault-1), at(scenario.TransitionFault), at(scenario.TransitionFault+30)
	assert.Empty(t, before.Communicators[0].Missing)
	require.Len(t, after.Communicators[0].Missing, 1)
	assert.Equal(t, 1, after.Communicators[0].Missing[0].Rank)
	assert.True(t, after.Communicators[0].Missing[0].Status.Dead)
	assert.Positive(t, after.Communicators[0].Ranks[0].Counts["AllReduce"])
	assert.Equal(t, after.Communicators[0].Ranks[0].Counts, later.Communicators[0].Ranks[0].Counts, "the survivor's count stands still")
	dump := parseDump(t, InspectorDump(c, 0, scenario.TransitionFault+30, time.Second, time.Time{}))
	assert.Len(t, dump, scenario.TransitionFault, "no record after the rank died")
}

// TestCollectorConfigReadsNCCL: a case's dumps are read by one nccl receiver in a pipeline of its
// own (each record names its node, which a node's resource processor would overwrite), a node's
// RAS service by a receiver in that node's pipeline.
func TestCollectorConfigReadsNCCL(t *testing.T) {
	c := caseNamed(t, "nccl_rank_dies")
	host := scenario.HostName(c, "node2")
	cfg, err := CollectorConfigWithNCCL(t.TempDir(), time.Second, ExportPrometheus, []scenario.Case{c},
		NCCLSources{Cases: map[string]bool{c.Name: true}, RAS: map[string]string{host: "127.0.0.1:28028"}})
	require.NoError(t, err)
	assert.Contains(t, cfg, "  nccl/"+c.Name+":\n")
	assert.Contains(t, cfg, "    metrics/nccl-"+c.Name+":\n      receivers: [nccl/"+c.Name+"]\n")
	assert.Contains(t, cfg, "receivers: [rnic/"+host+", cpuuncore/"+host+", gpu/"+host+", nccl/ras-"+host+"]\n      processors: [resource/"+host+"]")
	assert.Contains(t, cfg, `ras: {endpoint: "127.0.0.1:28028"`)
	assert.NotContains(t, cfg, "nccl/ras-"+scenario.HostName(c, "node1"), "node1 has no RAS service here")
}
