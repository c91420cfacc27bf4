package cpuuncorereceiver

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"
)

// ioValue returns the interconnect.io value of one memory series of the SKX fixture.
func ioValue(t *testing.T, ts *testScraper, direction, device string) int64 {
	ts.tick(5 * time.Second)
	md, err := ts.scrape(t.Context())
	require.NoError(t, err)
	dp, ok := metrictest.Find(md, "interconnect.io", map[string]any{"component": "cpu_memory", "direction": direction, "device": device})
	require.True(t, ok, "%s %s", direction, device)
	return dp.IntValue()
}

// TestReconcileKeepsOpenGroups: a rediscovery that finds the same groups keeps them open (no
// reopen, no lost counts) and each counter continues from its last count.
func TestReconcileKeepsOpenGroups(t *testing.T) {
	ts := newTestScraper(t, "skx", func(c *Config) { c.PCIe.Enabled = false })
	ts.fake.add(0, skxIMC0, skxCASRead, 10)
	assert.Equal(t, int64(10*64), ioValue(t, ts, "read", "socket0/imc"))
	opened := ts.fake.opened
	ts.discover(ts.clock)
	assert.Equal(t, opened, ts.fake.opened, "nothing reopened")
	ts.fake.add(0, skxIMC0, skxCASRead, 5)
	assert.Equal(t, int64(15*64), ioValue(t, ts, "read", "socket0/imc"))
}

// TestReconcileByKeyNotOrder: the same counters planned in another order (here the event overrides
// swapped) are other groups (a PERF_FORMAT_GROUP read returns values in open order) and are
// reopened, but every series keeps its total: totals are carried by series key, not by the index
// of a member in its group.
func TestReconcileByKeyNotOrder(t *testing.T) {
	read := EventConfig{Domain: "memory", PMU: "uncore_imc", Event: "cas_count_read", Direction: "read"}
	write := EventConfig{Domain: "memory", PMU: "uncore_imc", Event: "cas_count_write", Direction: "write"}
	ts := newTestScraper(t, "skx", func(c *Config) {
		c.PCIe.Enabled = false
		c.Events = []EventConfig{read, write}
	})
	ts.fake.add(0, skxIMC0, skxCASRead, 10)
	ts.fake.add(0, skxIMC0, skxCASWrite, 3)
	assert.Equal(t, int64(10*64), ioValue(t, ts, "read", "socket0/imc"))
	assert.Equal(t, [][]uint64{{skxCASRead, skxCASWrite}}, ts.fake.openAttrs(skxIMC0, 0))

	ts.cfg.Events = []EventConfig{write, read}
	ts.discover(ts.clock)
	assert.Equal(t, [][]uint64{{skxCASWrite, skxCASRead}}, ts.fake.openAttrs(skxIMC0, 0), "reopened in the new order")
	ts.fake.add(0, skxIMC0, skxCASRead, 1)
	ts.fake.add(0, skxIMC0, skxCASWrite, 2)
	assert.Equal(t, int64((10+1)*64), ioValue(t, ts, "read", "socket0/imc"), "reads continue from their total")
	ts.fake.add(0, skxIMC0, skxCASWrite, 1)
	assert.Equal(t, int64((3+2+1)*64), ioValue(t, ts, "write", "socket0/imc"), "writes too, not swapped with reads")
	open := 0
	for _, g := range ts.fake.groups {
		if !g.closed {
			open++
		}
	}
	assert.Equal(t, 12, open, "the old groups are closed")
}
