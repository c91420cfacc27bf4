package ownerreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/owner/ownertest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
)

// point is one interconnect.owner point: its key attributes, its owner attributes and value.
type point struct {
	component, pciBusID, kind, source, jobID, pod string
	value                                         int64
}

func points(t *testing.T, md pmetric.Metrics) map[string]point {
	t.Helper()
	out := map[string]point{}
	require.Len(t, metrictest.Metrics(md, "interconnect.owner"), md.MetricCount(), "interconnect.owner only")
	for _, dp := range metrictest.Points(md, "interconnect.owner") {
		a := dp.Attributes().AsRaw()
		p := point{component: a["component"].(string), pciBusID: a["pci.bus_id"].(string), kind: a["owner.kind"].(string),
			source: a["owner.source"].(string), jobID: a["job.id"].(string), pod: a["k8s.pod.name"].(string), value: dp.IntValue()}
		key := p.component + " " + p.pciBusID + " " + p.jobID
		_, dup := out[key]
		require.False(t, dup, "two points for %s", key)
		out[key] = p
	}
	return out
}

// TestScrapeSlurmJobSwitch: a two-job node (GPUs 0-3 job 4711, GPUs 4-7 job 4712, each with the
// NICs nearest to them), the prolog's mapping directory as dcgm-exporter's HPC mode reads it. After
// the switch of GPU 0..3 to job 4720 the next refresh and scrape carry the new owner, and the
// ended ownership once more with value 0; the number of info series stays that of the devices.
func TestScrapeSlurmJobSwitch(t *testing.T) {
	root := ownertest.WriteDGXNode(t)
	dir := filepath.Join(root, "run", "jobs")
	tree := &testfs.Tree{}
	for i := 0; i < 8; i++ {
		job := "4711"
		if i >= 4 {
			job = "4712"
		}
		tree.SlurmMapping("run/jobs", strconv.Itoa(i), job)
	}
	require.NoError(t, tree.Write(root))

	cfg := createDefaultConfig().(*Config)
	cfg.RootPath = root
	cfg.Slurm.Enabled = true
	cfg.Slurm.MappingDir = dir
	require.NoError(t, cfg.Validate())
	s := newOwnerScraper(cfg, receivertest.NewNopSettings(metadata.Type))
	require.NoError(t, s.start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, s.shutdown(context.Background())) })

	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	first := points(t, md)
	byJob := map[string]int{}
	for _, p := range first {
		require.EqualValues(t, 1, p.value)
		byJob[p.kind+" "+p.jobID]++
	}
	// Per job: 4 GPUs x 3 components, 4 NICs (rnic) + 4 IPoIB netdevs, 4 root ports.
	assert.Equal(t, 4*3+4+4+4, byJob["job 4711"])
	assert.Equal(t, 4*3+4+4+4, byJob["job 4712"])
	// 4 storage functions (rnic + netdev each), their 2 root ports, the stack-level cpu_pcie.
	assert.Equal(t, 4*2+2+1, byJob["shared "])
	assert.Equal(t, 1, byJob["node "])
	assert.Equal(t, "rule", first["rnic "+ownertest.NICAddress(0)+" 4711"].source)
	assert.Equal(t, "slurm", first["gpu_pcie "+ownertest.GPUAddress(0)+" 4711"].source)

	for i := 0; i < 4; i++ {
		require.NoError(t, os.WriteFile(filepath.Join(dir, strconv.Itoa(i)), []byte("4720\n"), 0o644))
	}
	s.resolver.Refresh(context.Background()) // the resolver's tick, without waiting for it
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	second := points(t, md)
	assert.EqualValues(t, 1, second["gpu_pcie "+ownertest.GPUAddress(0)+" 4720"].value)
	assert.EqualValues(t, 0, second["gpu_pcie "+ownertest.GPUAddress(0)+" 4711"].value, "the ended ownership, once, at 0")
	assert.EqualValues(t, 1, second["gpu_pcie "+ownertest.GPUAddress(4)+" 4712"].value)
	assert.Len(t, second, len(first)+(4*3+4+4+4), "the old series once more")

	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.Len(t, points(t, md), len(first), "then only the current ones")
}
