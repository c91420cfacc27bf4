//go:build !linux

package burst // import "github.com/otelcol-iclens/otelcol-iclens/internal/burst"

import "time"

// newSleepTicks are a time.Ticker's ticks where clock_nanosleep on a thread of its own is not at
// hand (a replay on another platform never samples; this keeps the packages building there). An
// unreferenced Ticker is collected (Go 1.23+).
func newSleepTicks(period time.Duration, stop <-chan struct{}) tickSource {
	return chanTicks{c: time.NewTicker(period).C, stop: stop}
}
