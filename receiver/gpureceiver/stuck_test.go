package gpureceiver

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// blockingSource is a source whose poll blocks until released, as a DCGM call does behind a
// hostengine that stopped answering (dcgmGetLatestValues waits on its socket).
type blockingSource struct {
	source
	release chan struct{}
}

func (b *blockingSource) poll(now time.Time, buf []sample) ([]sample, error) {
	<-b.release
	return b.source.poll(now, buf)
}

// TestStuckPollSkippedAndShutdownDoesNotWait: a poll that does not return is waited for only
// until the call timeout, reported once, skipped on later scrapes, and neither the scrape nor
// the shutdown waits for it; once it returns, GPU metrics come back.
func TestStuckPollSkippedAndShutdownDoesNotWait(t *testing.T) {
	f := newFakeDCGM(1)
	base := int64(1_800_000_000) * sec
	for k := int64(1); k <= 3; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, base+k*sec, 1000)
	}
	s, logs, clock := newTestScraper(t, f, nil)
	s.callTimeout = 100 * time.Millisecond
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	require.NotNil(t, s.src)
	bs := &blockingSource{source: s.src, release: make(chan struct{})}
	s.src = bs

	start := time.Now()
	clock.t = clock.t.Add(time.Second)
	m, err := s.scrape(context.Background())
	assert.ErrorIs(t, err, errStuck, "the scrape lost its GPU metrics: an error")
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Zero(t, m.DataPointCount())
	start = time.Now()
	_, err = s.scrape(context.Background())
	assert.ErrorIs(t, err, errStuck, "and so is every scrape while the call is stuck")
	assert.Less(t, time.Since(start), 50*time.Millisecond, "a stuck call is not waited for again")
	assert.Equal(t, 1, logs.FilterMessage("A GPU library call did not return in time; GPU metrics are skipped until it does").Len())

	done := make(chan error, 1)
	go func() { done <- s.shutdown(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Second):
		t.Fatal("shutdown waits for a stuck GPU library call")
	}

	close(bs.release)
	require.Eventually(t, func() bool { return !s.isStuck() }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, logs.FilterMessage("The GPU library answered again; reading GPU metrics").Len())
}
