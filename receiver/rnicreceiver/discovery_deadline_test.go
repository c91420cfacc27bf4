package rnicreceiver

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/metrictest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/zap"
)

// TestDiscoveryDoesNotWaitForStuckRead: at start, the discovery read of mlx4_1/1's link_layer
// blocks (a sysfs show() stuck behind hung firmware, see readgroup.go). The scrape returns after
// read_timeout with every other device, naming mlx4_1 once; while the read stays stuck mlx4_1 is
// left out and not reported again; once it returns, mlx4_1 is discovered and read again.
func TestDiscoveryDoesNotWaitForStuckRead(t *testing.T) {
	s, logs := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) {
		// Generous for a busy or emulated machine, where an ordinary discovery read has taken
		// more than 100 ms; the stuck read never returns, so the deadline is what ends the wait.
		cfg.ReadTimeout = 5 * time.Second
	})
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock)
	s.reader.OnOpen = func(p string) error {
		if strings.HasSuffix(p, filepath.Join("mlx4_1", "ports", "1", "link_layer")) {
			<-release
		}
		return nil
	}
	named := "mlx4_1: discovery reads did not return within 5s"

	// The read never returns until unblock: a scrape that waited for it would not return within
	// the minute (a deadline for a busy machine, not a speed).
	md, err := scrapeWithin(t, s, time.Minute, "the scrape waited for the stuck discovery")
	require.Error(t, err)
	assert.Contains(t, err.Error(), named)
	_, ok := metrictest.Find(md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
	assert.True(t, ok, "the other devices are discovered and read")
	absent(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit"))
	absent(t, md, "interconnect.io", rnicIO("mlx4_1/2", "transmit"))

	// While it is stuck, every scrape lacks the device's points: each returns it as an error.
	for range 3 {
		md, err = s.scrape(context.Background())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "mlx4_1: discovery reads still blocked", "returned on every scrape")
		_, ok = metrictest.Find(md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit"))
		assert.True(t, ok)
		absent(t, md, "interconnect.io", rnicIO("mlx4_1/1", "transmit"))
	}

	unblock()
	released := time.Now()
	require.Eventually(t, func() bool {
		md, _ := s.scrape(context.Background())
		_, ok := metrictest.Find(md, "interconnect.io", rnicIO("mlx4_1/1", "transmit"))
		return ok
	}, time.Minute, 20*time.Millisecond, "mlx4_1 is discovered once its reads return")
	t.Logf("released to discovered: %s", time.Since(released))
	assert.Equal(t, 1, logs.FilterMessage("discovery reads of the device returned; discovering it again").
		FilterField(zap.String("device", "mlx4_1")).Len(), "said once")
}
