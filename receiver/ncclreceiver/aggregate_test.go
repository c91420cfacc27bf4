package ncclreceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func rec(comm string, rank int64, sn uint64) record {
	return record{version: "v4.0", hostname: testHost, pid: 1, commID: comm, commName: "unknown", rank: rank, nranks: 8,
		op: "AllReduce", sn: sn, hasSN: true, msgBytes: 1 << 20, execUs: 100, busBwGBs: 18.35}
}

// TestSeriesBoundedAcrossJobs: communicators past max_communicators are counted and dropped, a
// communicator silent for stale_after takes its series along, and a record read twice (same
// coll_sn) is not a second sample. Time is the record's arrival, given, not the machine's clock.
func TestSeriesBoundedAcrossJobs(t *testing.T) {
	a := newAggregator(2, 10*time.Minute, nil)
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	assert.True(t, a.add(rec("0xa", 0, 1), t0))
	assert.True(t, a.add(rec("0xa", 0, 1), t0), "a duplicate is taken and ignored")
	assert.True(t, a.add(rec("0xb", 0, 1), t0))
	assert.False(t, a.add(rec("0xc", 0, 1), t0), "a third communicator is over the limit")
	series, outcomes := a.snapshot()
	assert.Len(t, series, 2)
	assert.Equal(t, int64(1), series[seriesKey{testHost, "0xa", 0, "AllReduce", "1MiB-4MiB"}].samples)
	assert.Equal(t, map[string]int64{outcomeAccepted: 2, outcomeIgnored: 1, outcomeOverLimit: 1}, outcomes)

	// Twenty minutes on, 0xa is still running, 0xb's job ended: 0xb goes, and a new job's
	// communicator takes its place.
	a.add(rec("0xa", 0, 2), t0.Add(15*time.Minute))
	a.expire(t0.Add(20 * time.Minute))
	assert.True(t, a.add(rec("0xc", 0, 1), t0.Add(20*time.Minute)))
	series, _ = a.snapshot()
	assert.Len(t, series, 2)
	_, hasB := series[seriesKey{testHost, "0xb", 0, "AllReduce", "1MiB-4MiB"}]
	assert.False(t, hasB)
	assert.Equal(t, int64(2), series[seriesKey{testHost, "0xa", 0, "AllReduce", "1MiB-4MiB"}].samples)
}
