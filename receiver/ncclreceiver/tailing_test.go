package ncclreceiver

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

// These tests tail dump directories laid out as the Inspector writes them: one
// <hostname>-pid<PID>.log per process (inspector.cc inspectorStateDumpJSON), opened with "w"
// (json.cc jsonInitFileOutput), one record a line (inspector_json.cc, jsonNewline), flushed after
// each dump (inspectorCommInfoListDump, jsonFlushOutput).

const comm = "0x7f8c496ae9f661"

// barrier writes one record to a file of its own and waits for it: the file consumer reads every
// matched file in each poll, so once the barrier is in, whatever was written before it has been
// looked at too.
func barrier(t *testing.T, s *ncclScraper, dir string, pid int) {
	t.Helper()
	before := s.outcome(outcomeAccepted)
	appendLines(t, dir, fileName(pid), testfs.InspectorLine(allReduce("0xbarrier", 0, pid, uint64(pid), 1<<20, 100)))
	waitFor(t, "the barrier record", func() bool { return s.outcome(outcomeAccepted) > before })
}

func TestTailFileAppearsAfterStartAndTornRecord(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nccl-inspector-4242") // not there yet at start
	s, logs := startScraper(t, testConfig(t.TempDir(), dir), nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	require.Equal(t, 1, logs.FilterMessageSnippet("not there yet").Len())

	require.NoError(t, os.MkdirAll(dir, 0o755))
	whole := testfs.InspectorLine(allReduce(comm, 0, 11, 1, 256<<20, 2000))
	torn := testfs.InspectorLine(allReduce(comm, 0, 11, 2, 256<<20, 2100))
	cut := len(torn) / 2
	appendLines(t, dir, fileName(11), whole, torn[:cut])
	waitFor(t, "the first record of a file created after start", func() bool { return s.outcome(outcomeAccepted) == 1 })
	barrier(t, s, dir, 90)
	assert.Equal(t, int64(2), s.outcome(outcomeAccepted), "the torn record is not taken before its newline")
	assert.Zero(t, s.outcome(outcomeMalformed), "a torn record is not parsed as a broken one")

	appendLines(t, dir, fileName(11), torn[cut:])
	waitFor(t, "the torn record once whole", func() bool { return s.outcome(outcomeAccepted) == 3 })
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	samples := pointsOf(md, "nccl.collective.samples")
	assert.Equal(t, 2.0, samples["nccl.comm.id="+comm+" nccl.rank=0 nccl.collective=AllReduce nccl.message_size=256MiB-1GiB pci.bus_id= "])
	assert.Zero(t, s.outcome(outcomeMalformed))
}

func TestTailRotationAndTruncation(t *testing.T) {
	dir := t.TempDir()
	s, _ := startScraper(t, testConfig(t.TempDir(), dir), nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()

	// Rotation by move and create (logrotate without copytruncate): the old file leaves the
	// pattern, a new one of the same name starts.
	appendLines(t, dir, fileName(21), testfs.InspectorLine(allReduce(comm, 1, 21, 1, 1<<20, 100)),
		testfs.InspectorLine(allReduce(comm, 1, 21, 2, 1<<20, 100)))
	waitFor(t, "two records before rotation", func() bool { return s.outcome(outcomeAccepted) == 2 })
	require.NoError(t, os.Rename(filepath.Join(dir, fileName(21)), filepath.Join(dir, fileName(21)+".1")))
	appendLines(t, dir, fileName(21), testfs.InspectorLine(allReduce(comm, 1, 21, 3, 1<<20, 100)))
	waitFor(t, "the record of the new file", func() bool { return s.outcome(outcomeAccepted) == 3 })

	// Truncation in place (copytruncate), then new records: read from the start again.
	appendLines(t, dir, fileName(22), testfs.InspectorLine(allReduce(comm, 2, 22, 1, 1<<20, 100)),
		testfs.InspectorLine(allReduce(comm, 2, 22, 2, 1<<20, 100)), testfs.InspectorLine(allReduce(comm, 2, 22, 3, 1<<20, 100)))
	waitFor(t, "three records before truncation", func() bool { return s.outcome(outcomeAccepted) == 6 })
	require.NoError(t, os.Truncate(filepath.Join(dir, fileName(22)), 0))
	barrier(t, s, dir, 91)
	appendLines(t, dir, fileName(22), testfs.InspectorLine(allReduce(comm, 2, 22, 4, 1<<20, 100)))
	waitFor(t, "the record written after truncation", func() bool { return s.outcome(outcomeAccepted) == 8 })
	barrier(t, s, dir, 92)
	assert.Equal(t, int64(9), s.outcome(outcomeAccepted), "nothing read twice")

	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	samples := pointsOf(md, "nccl.collective.samples")
	assert.Equal(t, 3.0, samples["nccl.comm.id="+comm+" nccl.rank=1 nccl.collective=AllReduce nccl.message_size=1MiB-4MiB pci.bus_id= "])
	assert.Equal(t, 4.0, samples["nccl.comm.id="+comm+" nccl.rank=2 nccl.collective=AllReduce nccl.message_size=1MiB-4MiB pci.bus_id= "])
}

// TestTailRestartMidFile stops the receiver in the middle of a file and starts another on the
// same storage: it reads on from the saved offset, nothing twice and nothing skipped.
func TestTailRestartMidFile(t *testing.T) {
	dir := t.TempDir()
	root := t.TempDir()
	id := component.MustNewID("file_storage")
	host := storageHost{id: id, ext: &memStorage{data: map[string][]byte{}}}
	cfg := testConfig(root, dir)
	cfg.Inspector.Storage = &id

	var lines []string
	for sn := uint64(1); sn <= 8; sn++ {
		lines = append(lines, testfs.InspectorLine(allReduce(comm, 3, 31, sn, 64<<20, 900)))
	}
	appendLines(t, dir, fileName(31), lines[:5]...)
	first, _ := startScraper(t, cfg, host)
	waitFor(t, "the first five records", func() bool { return first.outcome(outcomeAccepted) == 5 })
	require.NoError(t, first.shutdown(context.Background()))

	appendLines(t, dir, fileName(31), lines[5:]...)
	second, logs := startScraper(t, cfg, host)
	defer func() { require.NoError(t, second.shutdown(context.Background())) }()
	waitFor(t, "the three records written while stopped", func() bool { return second.outcome(outcomeAccepted) == 3 })
	barrier(t, second, dir, 93)
	assert.Equal(t, int64(4), second.outcome(outcomeAccepted), "the five records read before the restart are not read again")
	assert.Equal(t, int64(3), second.agg.series[seriesKey{host: testHost, commID: comm, rank: 3, op: "AllReduce", bucket: "64MiB-256MiB"}].samples)
	assert.Zero(t, logs.FilterMessageSnippet("unreadable").Len())
}

// TestTailManyProcesses is one HGX node: 10 processes (8 training ranks, 2 helpers) with 8
// communicators each (data, tensor, pipeline parallel groups and their sub-groups), each
// communicator running AllReduce at two sizes and an AllGather. The series per communicator are
// counted: one per rank, collective and size bucket, whatever the number of records.
func TestTailManyProcesses(t *testing.T) {
	dir := t.TempDir()
	s, _ := startScraper(t, testConfig(t.TempDir(), dir), nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()

	const procs, comms, rounds = 10, 8, 5
	for p := 0; p < procs; p++ {
		var lines []string
		for round := 0; round < rounds; round++ {
			for c := 0; c < comms; c++ {
				id := "0x" + strings.Repeat(string(rune('a'+c)), 14)
				sn := uint64(round*3 + 1)
				small := allReduce(id, p, 1000+p, sn, 16<<20, 300)
				large := allReduce(id, p, 1000+p, sn+1, 1<<30, 9000)
				ag := allReduce(id, p, 1000+p, sn+2, 2<<20, 80)
				ag.Op = "AllGather"
				for _, op := range []*testfs.InspectorOp{&small, &large, &ag} {
					op.NRanks = procs
					lines = append(lines, testfs.InspectorLine(*op))
				}
			}
		}
		appendLines(t, dir, fileName(1000+p), lines...)
	}
	want := int64(procs * comms * rounds * 3)
	waitFor(t, "every record of the 10 processes", func() bool { return s.outcome(outcomeAccepted) == want })

	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	perComm := map[string]int{}
	for k := range pointsOf(md, "nccl.collective.samples") {
		perComm[strings.Fields(k)[0]]++
	}
	require.Len(t, perComm, comms)
	for c, n := range perComm {
		assert.Equal(t, procs*3, n, "series of %s: one per rank (10) x 3 (collective, size bucket)", c)
		assert.LessOrEqual(t, n, procs*len(sizeBuckets)*2, "bounded by ranks x buckets x collectives")
	}
	t.Logf("%d records of %d processes x %d communicators: %d series of nccl.collective.samples, %d per communicator",
		want, procs, comms, len(pointsOf(md, "nccl.collective.samples")), procs*3)
	assert.Equal(t, float64(want), sum(pointsOf(md, "nccl.collective.samples")))
	assert.Equal(t, float64(want), sum(pointsOf(md, "nccl.collective.duration")), "every record in the duration histogram")
	assert.Equal(t, float64(want), sum(pointsOf(md, "nccl.collective.bus_bandwidth")))
}
