package ncclreceiver

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// TestBadInspectorInput: garbage in one file and a future format in another cost those records,
// each said once per file, and nothing else.
func TestBadInspectorInput(t *testing.T) {
	dir := t.TempDir()
	s, logs := startScraper(t, testConfig(t.TempDir(), dir), nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()

	good := testfs.InspectorLine(allReduce(comm, 0, 41, 1, 8<<20, 200))
	appendLines(t, dir, fileName(41), good)
	appendLines(t, dir, fileName(42), "{\"header\":{\"id\":\x00garbage\n", "not json at all\n",
		testfs.InspectorLine(allReduce(comm, 1, 42, 1, 8<<20, 200)))
	future := allReduce("0xfuture", 2, 43, 1, 8<<20, 200)
	future.Version = "v9.0"
	f1 := testfs.InspectorLine(future)
	future.SN = 2
	appendLines(t, dir, fileName(43), f1, testfs.InspectorLine(future))
	waitFor(t, "every line of the three files", func() bool {
		return s.outcome(outcomeAccepted) == 2 && s.outcome(outcomeMalformed) == 2 && s.outcome(outcomeUnsupportedVersion) == 2
	})

	unreadable := logs.FilterMessageSnippet("NCCL Inspector record unreadable")
	require.Equal(t, 1, unreadable.Len(), "one line for the garbage file, not one per bad record")
	assert.True(t, strings.HasSuffix(unreadable.All()[0].ContextMap()["file"].(string), fileName(42)))
	version := logs.FilterMessageSnippet("format this receiver does not read")
	require.Equal(t, 1, version.Len(), "one line for the future-format file")
	assert.Contains(t, version.All()[0].ContextMap()["error"], `got "v9.0"`)

	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	samples := pointsOf(md, "nccl.collective.samples")
	assert.Len(t, samples, 2, "the good file's and the garbage file's good record; the future file has no series")
	for k := range samples {
		assert.NotContains(t, k, "0xfuture")
	}
	records := pointsOf(md, "nccl.inspector.records")
	assert.Equal(t, 2.0, records["outcome=accepted "])
	assert.Equal(t, 2.0, records["outcome=malformed "])
	assert.Equal(t, 2.0, records["outcome=unsupported_version "])
}

// TestRecordsJoinedToGPU: a record of this node is joined to the GPU its process drives, with
// CUDA_VISIBLE_DEVICES renumbering the GPUs; a record of another node in a shared dump directory
// keeps its own host.name and no pci.bus_id (its pid is not one of ours).
func TestRecordsJoinedToGPU(t *testing.T) {
	root, dir := t.TempDir(), t.TempDir()
	gpus := testfs.HopperGPUs()
	var tree testfs.Tree
	tree.NvidiaGPUs(gpus)
	tree.ProcEnviron(51, []string{"CUDA_VISIBLE_DEVICES=4,5,6,7", "LOCAL_RANK=2"})
	require.NoError(t, tree.Write(root))
	s, _ := startScraper(t, testConfig(root, dir), nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()

	appendLines(t, dir, fileName(51), testfs.InspectorLine(allReduce(comm, 2, 51, 1, 8<<20, 200)))
	other := allReduce(comm, 3, 51, 1, 8<<20, 200)
	other.Hostname = "hgx-h100-08"
	appendLines(t, dir, "hgx-h100-08-pid51.log", testfs.InspectorLine(other))
	waitFor(t, "both records", func() bool { return s.outcome(outcomeAccepted) == 2 })

	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	byHost := map[string]string{}
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		h, _ := rms.At(i).Resource().Attributes().Get("host.name")
		for k := range pointsOf(singleResource(md, i), "nccl.collective.samples") {
			byHost[h.Str()] = k
		}
	}
	assert.Contains(t, byHost[testHost], "pci.bus_id="+gpus[6].BusID, "CUDA device 2 of 4,5,6,7 is physical GPU 6")
	assert.Contains(t, byHost["hgx-h100-08"], "pci.bus_id= ")
	hist := pointsOf(md, "nccl.collective.bus_bandwidth")
	assert.Equal(t, 2.0, sum(hist))
}

// TestLocalHostOnly: in a dump directory shared by the job's nodes, local_host_only reads this
// node's files only (their names begin with its hostname, inspector.cc inspectorStateDumpJSON).
func TestLocalHostOnly(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t.TempDir(), dir)
	cfg.Inspector.LocalHostOnly = true
	s, _ := startScraper(t, cfg, nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	other := allReduce(comm, 3, 81, 1, 8<<20, 200)
	other.Hostname = "hgx-h100-08"
	appendLines(t, dir, "hgx-h100-08-pid81.log", testfs.InspectorLine(other))
	appendLines(t, dir, fileName(82), testfs.InspectorLine(allReduce(comm, 2, 82, 1, 8<<20, 200)))
	waitFor(t, "this node's record", func() bool { return s.outcome(outcomeAccepted) == 1 })
	barrier(t, s, dir, 94)
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Len(t, pointsOf(md, "nccl.collective.samples"), 2, "this node's record and the barrier, not the other node's")
	for k := range pointsOf(md, "nccl.collective.samples") {
		assert.NotContains(t, k, "nccl.rank=3 ")
	}
}
