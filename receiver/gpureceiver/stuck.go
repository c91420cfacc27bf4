package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"
)

// defaultCallTimeout: a DCGM or NVML poll answers in milliseconds; one that takes seconds is a
// hostengine or driver that hangs (an NVML call can block behind a GPU that fell off the bus).
const defaultCallTimeout = 5 * time.Second

// errStuck is the error of a scrape skipped because a GPU library call has not returned.
var errStuck = errors.New("a GPU library call has not returned; GPU metrics skipped")

// isStuck reports whether a poll that did not return in time is still blocked; when it has
// returned since, GPU metrics are read again (its late samples are dropped: the integrators
// bridge the gap or start over, as after any gap).
func (s *gpuScraper) isStuck() bool {
	if s.stuck == nil {
		return false
	}
	select {
	case <-s.stuck:
		s.stuck = nil
		s.log.Recover(keyStuck, "The GPU library answered again; reading GPU metrics")
		return false
	default:
		return true
	}
}

// pollWithDeadline polls the source on a goroutine and waits for it until callTimeout (or the
// scrape's deadline). A poll that does not return in time is reported once and left to finish;
// ok is false then, and the scrapes skip the GPUs until it has returned.
func (s *gpuScraper) pollWithDeadline(ctx context.Context, now time.Time) (buf []sample, err error, ok bool) {
	type result struct {
		buf []sample
		err error
	}
	timeout := s.callTimeout
	// The deadline is the wall clock's, not the scrape's (injected) now.
	if d, has := ctx.Deadline(); has && time.Until(d) < timeout {
		timeout = max(time.Until(d), 0)
	}
	done := make(chan result, 1)
	src, in := s.src, s.buf[:0]
	go func() {
		b, err := src.poll(now, in)
		done <- result{b, err}
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case r := <-done:
		return r.buf, r.err, true
	case <-t.C:
	}
	stuck := make(chan struct{})
	go func() {
		<-done
		close(stuck)
	}()
	s.stuck, s.buf = stuck, nil // the blocked poll owns the old buffer
	s.log.Fail(keyStuck, "A GPU library call did not return in time; GPU metrics are skipped until it does",
		errStuck, zap.String("source", src.kind()), zap.Duration("timeout", timeout))
	return nil, nil, false
}
