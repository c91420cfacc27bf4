package ncclreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestInspectorTextfile reads the Prometheus textfile mode as inspector_prom.cc writes it (the
// README's example values): each bucket's two values under its labels less version, slurm_job_id
// and gpu, the file's GPU joined by the UUID in its name (inspectorPromGetFilename) to the NVIDIA
// module's list. A file caught while the Inspector rewrites it is left out of that scrape and
// said once; a file not rewritten for stale_after is a job that ended and is left out.
func TestInspectorTextfile(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	gpus := testfs.HopperGPUs()
	var tree testfs.Tree
	tree.NvidiaGPUs(gpus)
	require.NoError(t, tree.Write(root))
	cfg := testConfig(root, dir)
	s, logs := startScraper(t, cfg, nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()

	file := func(g testfs.NvidiaGPU) string {
		return filepath.Join(dir, "nccl_inspector_metrics_"+strings.TrimPrefix(g.UUID, "GPU-")+".prom")
	}
	good := testfs.InspectorPromFile([]testfs.InspectorPromBucket{
		{Node: "nvl72004-T01", GPU: "GPU0", CommName: "DP Group 0", NNodes: 1, NRanks: 4, Op: "AllReduce",
			MessageSize: "4-5GB", AlgoProto: "Ring_ll", BusBw: 678.263, ExecUs: 9498.47},
		{Node: "nvl72004-T01", GPU: "GPU0", CommName: "DP Group 0", NNodes: 1, NRanks: 4, P2P: true, Op: "Send",
			MessageSize: "512-513MB", BusBw: 464.9, ExecUs: 1154.87},
	})
	require.NoError(t, os.WriteFile(file(gpus[3]), []byte(good), 0o644))
	torn := testfs.InspectorPromFile([]testfs.InspectorPromBucket{{Node: "nvl72004-T01", GPU: "GPU1", CommName: "TP", NNodes: 1,
		NRanks: 4, Op: "AllGather", MessageSize: "1-2MB", AlgoProto: "Ring_simple", BusBw: 120.5, ExecUs: 40}})
	require.NoError(t, os.WriteFile(file(gpus[4]), []byte(torn[:len(torn)-20]), 0o644))
	require.NoError(t, os.WriteFile(file(gpus[5]), []byte(good), 0o644))
	old := time.Now().Add(-cfg.Inspector.StaleAfter - time.Minute)
	require.NoError(t, os.Chtimes(file(gpus[5]), old, old))

	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	bw := pointsOf(md, "nccl.inspector.textfile.bus_bandwidth")
	assert.Equal(t, map[string]float64{
		"nccl.collective=AllReduce nccl.message_size=4-5GB pci.bus_id=" + gpus[3].BusID + " ": 678.263,
		"nccl.collective=Send nccl.message_size=512-513MB pci.bus_id=" + gpus[3].BusID + " ":  464.9,
	}, bw, "the torn file and the stale one are left out")
	assert.Equal(t, 9498.47, pointsOf(md, "nccl.inspector.textfile.duration")["nccl.collective=AllReduce nccl.message_size=4-5GB pci.bus_id="+gpus[3].BusID+" "])
	require.Equal(t, 1, logs.FilterMessageSnippet("textfile unreadable").Len())

	require.NoError(t, os.WriteFile(file(gpus[4]), []byte(torn), 0o644)) // the rewrite is done
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 120.5, pointsOf(md, "nccl.inspector.textfile.bus_bandwidth")["nccl.collective=AllGather nccl.message_size=1-2MB pci.bus_id="+gpus[4].BusID+" "])
	assert.Equal(t, 1, logs.FilterMessageSnippet("textfile unreadable").Len())
	for _, dp := range metrictest.Points(md, "nccl.inspector.textfile.bus_bandwidth") {
		assert.ElementsMatch(t, []string{"nccl.comm.name", "nccl.comm.size", "nccl.collective", "nccl.message_size", "nccl.algo_proto", "pci.bus_id"},
			keysOf(dp.Attributes().AsRaw()), "version, slurm_job_id and gpu are not attributes")
	}
	rm := md.ResourceMetrics().At(0)
	host, _ := rm.Resource().Attributes().Get("host.name")
	assert.Equal(t, "nvl72004-T01", host.Str(), "the node label is the resource's host.name")
}

func keysOf(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
