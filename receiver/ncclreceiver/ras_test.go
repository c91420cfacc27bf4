package ncclreceiver

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"
	"github.com/otelcol-iclens/otelcol-iclens/internal/testfs"
)

func newFakeRAS(t *testing.T, mode string) *fakeras.Server {
	s, err := fakeras.Listen("127.0.0.1:0", mode)
	require.NoError(t, err)
	t.Cleanup(s.Close)
	return s
}

func ranks(n int, counts uint64) []fakeras.Rank {
	out := make([]fakeras.Rank, n)
	for i := range out {
		out[i] = fakeras.Rank{Rank: i, PID: 5000 + i, CudaDev: i % 8, Host: "10.0.0.1",
			Counts: map[string]uint64{"AllReduce": counts, "AllGather": counts / 2}}
	}
	return out
}

func TestRASStatus(t *testing.T) {
	srv := newFakeRAS(t, "")
	cfg := testConfig(t.TempDir(), "")
	cfg.RAS.Endpoint = srv.Addr()
	cfg.RAS.Timeout = 10 * time.Second
	s, logs := startScraper(t, cfg, nil)

	rs := ranks(16, 1200)
	rs[9].Counts["AllReduce"] = 1187 // a rank behind
	rs[15] = fakeras.Rank{Rank: 15, PID: 5015, Host: "10.0.0.2", Missing: true, Unresponsive: true}
	srv.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 16, Ranks: rs}}))
	md, err := s.scrape(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 1.0, sum(pointsOf(md, "nccl.ras.up")))
	states := pointsOf(md, "nccl.ras.ranks")
	assert.Equal(t, 15.0, states["nccl.comm.id="+comm+" rank.state=running "])
	assert.Equal(t, 1.0, states["nccl.comm.id="+comm+" rank.state=unresponsive "])
	assert.Equal(t, 0.0, states["nccl.comm.id="+comm+" rank.state=dead "])
	ops := pointsOf(md, "nccl.ras.operations")
	assert.Equal(t, 1187.0, ops["nccl.comm.id="+comm+" nccl.collective=AllReduce bound=min "])
	assert.Equal(t, 1200.0, ops["nccl.comm.id="+comm+" nccl.collective=AllReduce bound=max "])
	assert.Equal(t, 600.0, ops["nccl.comm.id="+comm+" nccl.collective=AllGather bound=max "])
	assert.Equal(t, 1, logs.FilterMessage("NCCL rank state changed").Len(), "the unresponsive rank, first seen")

	// Rank 3 aborts and the missing rank is now considered dead: one line each.
	rs[3].Aborted = true
	rs[15].Dead = true
	srv.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 16, Ranks: rs}}))
	md, err = s.scrape(context.Background())
	require.NoError(t, err)
	states = pointsOf(md, "nccl.ras.ranks")
	assert.Equal(t, 14.0, states["nccl.comm.id="+comm+" rank.state=running "])
	assert.Equal(t, 1.0, states["nccl.comm.id="+comm+" rank.state=aborted "])
	assert.Equal(t, 1.0, states["nccl.comm.id="+comm+" rank.state=dead "])
	changes := logs.FilterMessage("NCCL rank state changed").All()
	require.Len(t, changes, 3)
	assert.Equal(t, "aborted", changes[1].ContextMap()["to"])
	assert.Equal(t, "dead", changes[2].ContextMap()["to"])
	assert.Equal(t, "unresponsive", changes[2].ContextMap()["from"])

	_, err = s.scrape(context.Background())
	require.NoError(t, err)
	assert.Len(t, logs.FilterMessage("NCCL rank state changed").All(), 3, "no change, no line")
}

// TestRASPortThatNeverAnswers: a port that accepts and never answers costs one timeout a scrape
// and the RAS series, said once; the Inspector's series are still there.
func TestRASPortThatNeverAnswers(t *testing.T) {
	srv := newFakeRAS(t, "silent")
	dir := t.TempDir()
	cfg := testConfig(t.TempDir(), dir)
	cfg.RAS.Endpoint = srv.Addr()
	cfg.RAS.Timeout = 100 * time.Millisecond
	s, logs := startScraper(t, cfg, nil)
	defer func() { require.NoError(t, s.shutdown(context.Background())) }()
	appendLines(t, dir, fileName(61), testfs.InspectorLine(allReduce(comm, 0, 61, 1, 8<<20, 200)))
	waitFor(t, "the Inspector record", func() bool { return s.outcome(outcomeAccepted) == 1 })

	for range 2 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 0.0, sum(pointsOf(md, "nccl.ras.up")))
		assert.Empty(t, pointsOf(md, "nccl.ras.ranks"))
		assert.Len(t, pointsOf(md, "nccl.collective.samples"), 1)
	}
	said := logs.FilterMessageSnippet("NCCL RAS service not answering").All()
	require.Len(t, said, 1)
	assert.Contains(t, said[0].ContextMap()["error"], `no answer to "CLIENT PROTOCOL 2"`)
}

func TestRASRefusedAndPre2287(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	cfg := testConfig(t.TempDir(), "")
	cfg.RAS.Endpoint = closed
	s, logs := startScraper(t, cfg, nil)
	for range 3 {
		md, err := s.scrape(context.Background())
		require.NoError(t, err)
		assert.Equal(t, 0.0, sum(pointsOf(md, "nccl.ras.up")))
	}
	assert.Equal(t, 1, logs.FilterMessageSnippet("NCCL RAS service not answering").Len(), "no job on the node: said once, then quiet")

	old := newFakeRAS(t, "pre2287")
	_, err = queryRAS(context.Background(), old.Addr(), 5*time.Second)
	assert.ErrorContains(t, err, "NCCL before 2.28.7")

	garbled := newFakeRAS(t, "")
	garbled.Set("NCCL version 2.28.9\n(text, not JSON)\n")
	_, err = queryRAS(context.Background(), garbled.Addr(), 5*time.Second)
	assert.ErrorContains(t, err, "not the JSON document")
}

// TestRASOutageSaidOnce: one outage that fails at two steps, a service that accepts and then
// does not answer (the job ending, mode "silent") and then refuses connections, is one
// "not answering" line; the step change is a debug line; the recovery is said once.
func TestRASOutageSaidOnce(t *testing.T) {
	silent, err := fakeras.Listen("127.0.0.1:0", "silent")
	require.NoError(t, err)
	addr := silent.Addr()
	core, logs := observer.New(zap.DebugLevel)
	p := rasPoller{cfg: RASConfig{Endpoint: addr, Timeout: 100 * time.Millisecond}, logger: zap.New(core)}

	assert.Nil(t, p.poll(context.Background()))
	assert.Nil(t, p.poll(context.Background()))
	silent.Close()
	assert.Nil(t, p.poll(context.Background()), "refused")
	assert.Nil(t, p.poll(context.Background()), "refused")
	assert.Equal(t, 1, logs.FilterMessageSnippet("NCCL RAS service not answering").Len())
	assert.Equal(t, 1, logs.FilterMessageSnippet("now failing at another step").Len())

	back, err := fakeras.Listen(addr, "")
	require.NoError(t, err, "the port the silent service held")
	t.Cleanup(back.Close)
	back.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 2, Ranks: ranks(2, 10)}}))
	assert.NotNil(t, p.poll(context.Background()))
	assert.NotNil(t, p.poll(context.Background()))
	assert.Equal(t, 1, logs.FilterMessage("NCCL RAS service answering again").Len())
	assert.Equal(t, 1, logs.FilterMessageSnippet("NCCL RAS service not answering").Len())
}
