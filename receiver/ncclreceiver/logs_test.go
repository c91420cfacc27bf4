package ncclreceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/collector/scraper/scraperhelper"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/otelcol-iclens/otelcol-iclens/internal/fakeras"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

// TestRASLogsOneRecordPerChange: in a logs pipeline the receiver emits one log record per rank
// whose state RAS reports changed (NCCL src/ras/client_support.cc, the STATUS a RAS client gets;
// internal/fakeras serves it): the unresponsive rank when first seen, then the aborted rank and
// the missing rank now considered dead, at Warn, each naming communicator, rank, both states,
// host and pid; nothing while nothing changes; nothing, said once, while RAS does not answer.
// Scrapes are driven by the controller's ticker channel, so the test counts scrapes, not time.
func TestRASLogsOneRecordPerChange(t *testing.T) {
	srv := newFakeRAS(t, "")
	cfg := testConfig(t.TempDir(), "")
	cfg.RAS.Endpoint = srv.Addr()
	cfg.RAS.Timeout = 10 * time.Second
	cfg.InitialDelay = 0
	rs := ranks(16, 1200)
	rs[15] = fakeras.Rank{Rank: 15, PID: 5015, Host: "10.0.0.2", Missing: true, Unresponsive: true}
	srv.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 16, Ranks: rs}}))

	core, said := observer.New(zap.InfoLevel)
	set := receivertest.NewNopSettings(metadata.Type)
	set.Logger = zap.New(core)
	sink := new(consumertest.LogsSink)
	ticks := make(chan time.Time)
	r, err := newLogsController(cfg, set, sink, scraperhelper.WithTickerChannel(ticks))
	require.NoError(t, err)
	require.NoError(t, r.Start(context.Background(), componenttest.NewNopHost()))
	t.Cleanup(func() { require.NoError(t, r.Shutdown(context.Background())) })

	records := func(n int) []plog.LogRecord {
		t.Helper()
		require.Eventually(t, func() bool { return sink.LogRecordCount() >= n }, time.Minute, 10*time.Millisecond, "%d log records", n)
		var out []plog.LogRecord
		for _, l := range sink.AllLogs() {
			for i := range l.ResourceLogs().Len() {
				sl := l.ResourceLogs().At(i).ScopeLogs()
				for j := range sl.Len() {
					for k := range sl.At(j).LogRecords().Len() {
						out = append(out, sl.At(j).LogRecords().At(k))
					}
				}
			}
		}
		return out
	}
	tick := func() { ticks <- time.Now() }

	tick()
	first := records(1)
	require.Len(t, first, 1, "the unresponsive rank, first seen; the running ranks are not news")
	assert.Equal(t, rankStateEvent, first[0].EventName())
	assert.Equal(t, plog.SeverityNumberWarn, first[0].SeverityNumber())
	attrs := first[0].Attributes().AsRaw()
	assert.Equal(t, map[string]any{"nccl.comm.id": comm, "nccl.rank": int64(15), "nccl.rank.state": "unresponsive",
		"nccl.rank.previous_state": "unknown", "nccl.rank.host": "10.0.0.2", "process.pid": int64(5015)}, attrs)

	rs[3].Aborted = true
	rs[15].Dead = true
	srv.Set(fakeras.StatusJSON("2.28.7", []fakeras.Comm{{Hash: comm, Size: 16, Ranks: rs}}))
	tick()
	all := records(3)
	require.Len(t, all, 3)
	assert.Equal(t, "aborted", all[1].Attributes().AsRaw()["nccl.rank.state"])
	assert.Equal(t, "dead", all[2].Attributes().AsRaw()["nccl.rank.state"])
	assert.Equal(t, "unresponsive", all[2].Attributes().AsRaw()["nccl.rank.previous_state"])
	assert.Contains(t, all[2].Body().Str(), "NCCL rank 15 of communicator "+comm+": unresponsive -> dead (10.0.0.2, pid 5015)")

	// No change: a scrape (the tick is taken only once the previous scrape is done), no record.
	tick()
	tick()
	assert.Equal(t, 3, sink.LogRecordCount(), "no change, no record")

	// RAS goes away: no record, one line.
	srv.Close()
	tick()
	tick()
	tick()
	assert.Equal(t, 3, sink.LogRecordCount())
	assert.Equal(t, 1, said.FilterMessage("NCCL RAS service not answering; RAS metrics are left out until it does").Len(), "said once")
}
