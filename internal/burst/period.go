package burst // import "github.com/otelcol-iclens/otelcol-iclens/internal/burst"

import (
	"fmt"
	"time"
)

// MinPeriod is the shortest bursts.period a receiver accepts: Go's timers and a loaded node do not
// hold much less, and a byte counter that its driver refreshes more slowly (mlx5's hw_counters
// cache lives 10 ms) would only repeat itself.
const MinPeriod = 10 * time.Millisecond

// ValidatePeriod checks a receiver's bursts.period against its collection interval: 0 (off), or at
// least MinPeriod and shorter than the interval, so that every interval folds at least one window.
// The wording is the rnic and cpuuncore receivers'.
func ValidatePeriod(period, collection time.Duration) error {
	switch {
	case period < 0:
		return fmt.Errorf("bursts.period: must not be negative, got %v", period)
	case period > 0 && period < MinPeriod:
		return fmt.Errorf("bursts.period: must be 0 (off) or at least %v, got %v", MinPeriod, period)
	case period > 0 && collection > 0 && period >= collection:
		return fmt.Errorf("bursts.period: must be shorter than collection_interval (%v), got %v", collection, period)
	}
	return nil
}
