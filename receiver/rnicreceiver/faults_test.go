package rnicreceiver

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStuckDeviceSkippedOthersRead: a read of mlx5_4 blocks, as a sysfs read does behind hung
// firmware (mlx5 cmd.c waits for the firmware's answer). The scrape returns by read_timeout, names
// the device once, and the other devices are read on this scrape and the next; shutdown does not
// wait for the blocked read; when it returns the device is read again.
func TestStuckDeviceSkippedOthersRead(t *testing.T) {
	s, logs := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) {
		cfg.ReadTimeout = 200 * time.Millisecond
	})
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	// Discovery first (it reads on the scrape's goroutine); then the counter reads block.
	_, _ = s.scrape(context.Background())
	s.reader.OnOpen = func(p string) error {
		if strings.Contains(p, "/mlx5_4/ports/3/counters/") {
			<-release
		}
		return nil
	}

	start := time.Now()
	md, err := s.scrape(context.Background())
	took := time.Since(start)
	assert.Less(t, took, 2*time.Second, "the scrape waits for the stuck device only until read_timeout")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mlx5_4: reads did not return within 200ms")
	// The other devices were read; the stuck one's series are not reported from half a read.
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))
	assert.Equal(t, int64(4000), value(t, md, "interconnect.io", map[string]any{"component": "netdev", "device": "bond0", "direction": "transmit"}))
	absent(t, md, "rnic.port.state", map[string]any{"device": "mlx5_4/1"})

	// Still stuck: skipped at once, not reported again.
	start = time.Now()
	md, err = s.scrape(context.Background())
	assert.Less(t, time.Since(start), 150*time.Millisecond, "a device still stuck is not waited for again")
	if err != nil {
		assert.NotContains(t, err.Error(), "mlx5_4")
	}
	assert.Equal(t, int64(85378896588*4), value(t, md, "interconnect.io", rnicIO("mlx5_bond_0/1", "transmit")))

	// The read returns: the device is read again.
	unblock()
	require.Eventually(t, func() bool {
		md, _ = s.scrape(context.Background())
		_, ok := point(md, "rnic.port.state", map[string]any{"device": "mlx5_4/1"})
		return ok
	}, 5*time.Second, 50*time.Millisecond)
	assert.Equal(t, 1, logs.FilterMessage("reads of the device returned; reading it again").Len())
}

// TestShutdownDoesNotWaitForStuckRead: the receiver's shutdown returns while a read is blocked.
func TestShutdownDoesNotWaitForStuckRead(t *testing.T) {
	s, _ := newTestScraper(t, filepath.Join("testdata", "synthetic"), func(cfg *Config) {
		cfg.ReadTimeout = 100 * time.Millisecond
	})
	release := make(chan struct{})
	defer close(release)
	_, _ = s.scrape(context.Background())
	s.reader.OnOpen = func(p string) error {
		if strings.Contains(p, "/mlx5_bond_0/") && strings.Contains(p, "/counters/") {
			<-release
		}
		return nil
	}
	_, err := s.scrape(context.Background())
	require.Error(t, err)
	done := make(chan error, 1)
	go func() { done <- s.shutdown(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Second):
		t.Fatal("shutdown waits for a stuck read")
	}
}
