package simulate

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"
)

// replaySeries runs one receiver over a recording as replay does and returns, for each of its
// first scrapes, every interconnect.io series' value (TwoJobSeries.Key without the owner).
func replaySeries(t *testing.T, f receiver.Factory, file string, scrapes int) []map[string]int64 {
	t.Helper()
	var out []map[string]int64
	for _, md := range replayScrapes(t, f, file, scrapes, true) {
		m := map[string]int64{}
		for _, dp := range metrictest.Points(md, "interconnect.io") {
			a := dp.Attributes().AsRaw()
			s := TwoJobSeries{Component: a["component"].(string), Direction: a["direction"].(string), Device: a["device"].(string)}
			if b, ok := a["pci.bus_id"].(string); ok {
				s.BusID = b
			}
			m[s.Key()] += dp.IntValue()
		}
		out = append(out, m)
	}
	return out
}

// TestTwoJobRecordingsThroughReceivers replays the two-job node's recordings through the real
// rnic, cpuuncore (pcie granularity port) and gpu receivers: at every scrape each series the model
// has (TwoJobBytes: the slots' ports, netdevs, GPUs and root ports, host memory per socket) reads
// the model's counter (TwoJobCounters), each slot's bytes of one sample are its case's rates, and
// every other series (the IIO parts of no root port) reads zero.
func TestTwoJobRecordingsThroughReceivers(t *testing.T) {
	dir := t.TempDir()
	const samples = 8
	paths, err := WriteTwoJob(Options{Dir: dir, Interval: recordedInterval, Samples: samples,
		UncoreFixture: filepath.Join("..", "..", "receiver", "cpuuncorereceiver", "testdata", "skx")})
	require.NoError(t, err)
	require.Len(t, paths, 3)
	want := TwoJobCounters(samples, recordedInterval.Seconds())
	factories := map[string]receiver.Factory{"rnic": rnicreceiver.NewFactory(), "cpuuncore": cpuuncorereceiver.NewFactory(), "gpu": gpureceiver.NewFactory()}
	components := map[string][]string{"rnic": {"rnic", "netdev"}, "cpuuncore": {"cpu_pcie", "cpu_memory"}, "gpu": {"gpu_pcie"}}
	for name, f := range factories {
		got := replaySeries(t, f, filepath.Join(dir, TwoJobCase, TwoJobNode+"-"+name+".jsonl"), samples)
		for k := range samples {
			modelled := map[string]bool{}
			for s, v := range want[k] {
				if !slices.Contains(components[name], s.Component) {
					continue
				}
				modelled[s.Key()] = true
				g, ok := got[k][s.Key()]
				if v == 0 && !ok {
					continue // the gpu receiver's first poll has no bytes yet
				}
				require.True(t, ok, "%s scrape %d: no series %s (has %v)", name, k, s.Key(), got[k])
				// Counters are whole words (4 bytes) or counts (64 bytes a CAS, on each of a socket's
				// IMCs) of the model.
				assert.InDelta(t, v, float64(g), 1e-9*v+512+64*float64(k), "%s scrape %d: %s", name, k, s.Key())
			}
			for key, g := range got[k] {
				if !modelled[key] {
					assert.Zero(t, g, "%s scrape %d: %s carries no traffic in the model", name, k, key)
				}
			}
		}
	}

	// One sample's bytes per slot are its case's rates (node1 of each), over its own devices.
	const i = samples - 1
	w := scenario.Wobble(i, 0)
	for j, c := range TwoJobCases() {
		tr := c.At(i, 0)
		per := map[string]float64{}
		for s, b := range TwoJobBytes(i, 1) {
			if s.Slot == j {
				per[s.Component+" "+s.Direction] += b
			}
		}
		assert.InEpsilon(t, tr.RNICTx*w, per["rnic transmit"], 1e-9, "slot %d (%s)", j, c.Name)
		assert.InEpsilon(t, tr.GPUPCIeTx*w, per["gpu_pcie transmit"], 1e-9, "slot %d: its four GPUs together", j)
		assert.InEpsilon(t, tr.GPUPCIeRx*w, per["gpu_pcie receive"], 1e-9, "slot %d", j)
		assert.InEpsilon(t, (tr.CPUPCIeRx+tr.NICRootRx)*w, per["cpu_pcie receive"], 1e-9, "slot %d: its root port", j)
	}
	var mem float64
	for s, b := range TwoJobBytes(i, 1) {
		if s.Component == "cpu_memory" && s.Direction == "write" {
			mem += b
		}
	}
	a, b := TwoJobCases()[0].At(i, 0), TwoJobCases()[1].At(i, 0)
	assert.InEpsilon(t, (a.MemWrite+b.MemWrite)*(1+socket1Share)*w, mem, 1e-9, "host memory is both jobs' (the node's)")
}

// TestTwoJobRootMatchesRecordings: the owner receiver's root_path (WriteTwoJobRoot) is the rnic
// recording's tree: every GPU and NIC address the recordings name has its sysfs function there,
// each NIC under the same switch as its slot's GPUs, and the driver's procfs file of each GPU.
func TestTwoJobRootMatchesRecordings(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, WriteTwoJobRoot(root))
	node := TwoJobPCINode()
	for j := range 2 {
		nic := testfs.FunctionRel(node, TwoJobNICBus(j))
		require.NotEmpty(t, nic)
		assert.DirExists(t, filepath.Join(root, "sys", nic, "infiniband", scenario.JobNIC(j)))
		assert.FileExists(t, filepath.Join(root, "sys", "class", "net", scenario.JobNetdev(j), "statistics", "tx_bytes"))
		for k := range scenario.JobGPUs {
			gpu := testfs.FunctionRel(node, TwoJobGPUBus(j, k))
			require.NotEmpty(t, gpu)
			assert.Equal(t, filepath.Dir(filepath.Dir(nic)), filepath.Dir(filepath.Dir(gpu)), "slot %d: GPU %d and the NIC share the switch", j, k)
			assert.Contains(t, gpu, TwoJobRootPort(j))
			assert.FileExists(t, filepath.Join(root, "proc", "driver", "nvidia", "gpus", TwoJobGPUBus(j, k), "information"))
		}
	}
}
