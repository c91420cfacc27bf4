package gpureceiver

import (
	"context"
	"sync/atomic"
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
	polls   atomic.Int32
}

func (b *blockingSource) poll(now time.Time, buf []sample) ([]sample, error) {
	b.polls.Add(1)
	<-b.release
	return b.source.poll(now, buf)
}

// TestStuckPollSkippedAndShutdownDoesNotWait: a poll that does not return is waited for only
// until the call timeout, reported once, not called again while it is blocked, and neither the
// scrape nor the shutdown waits for it; once it returns, GPU metrics come back. The poll cannot
// return before it is released, so the outcome does not depend on the machine's speed: the
// deadlines below are generous bounds on a wait that, without the bug they catch, ends at once.
func TestStuckPollSkippedAndShutdownDoesNotWait(t *testing.T) {
	f := newFakeDCGM(1)
	base := int64(1_800_000_000) * sec
	for k := int64(1); k <= 3; k++ {
		f.addSample(0, dcgmFieldPCIeTxRate, base+k*sec, 1000)
	}
	s, logs, clock := newTestScraper(t, f, nil)
	require.NoError(t, s.start(context.Background(), nil))
	scrapeOnce(t, s)
	require.NotNil(t, s.src)
	bs := &blockingSource{source: s.src, release: make(chan struct{})}
	s.src = bs
	s.callTimeout = time.Millisecond

	clock.t = clock.t.Add(time.Second)
	m, err := s.scrape(context.Background())
	assert.ErrorIs(t, err, errStuck, "the scrape lost its GPU metrics: an error")
	assert.Zero(t, m.DataPointCount())
	_, err = s.scrape(context.Background())
	assert.ErrorIs(t, err, errStuck, "and so is every scrape while the call is stuck")
	assert.EqualValues(t, 1, bs.polls.Load(), "a stuck call is not waited for again, nor a second one started")
	assert.Equal(t, 1, logs.FilterMessage("A GPU library call did not return in time; GPU metrics are skipped until it does").Len())

	done := make(chan error, 1)
	go func() { done <- s.shutdown(context.Background()) }()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("shutdown waits for a stuck GPU library call (it is released only after shutdown returns)")
	}

	close(bs.release)
	require.Eventually(t, func() bool { return !s.isStuck() }, time.Minute, 10*time.Millisecond,
		"waiting for the released poll's goroutine to mark the source answered again")
	assert.Equal(t, 1, logs.FilterMessage("The GPU library answered again; reading GPU metrics").Len())
}
