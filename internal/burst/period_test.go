package burst

import (
	"testing"
	"time"
)

func TestValidatePeriod(t *testing.T) {
	for _, c := range []struct {
		period, collection time.Duration
		want               string
	}{
		{0, time.Second, ""},
		{MinPeriod, time.Second, ""},
		{-time.Millisecond, time.Second, "bursts.period: must not be negative, got -1ms"},
		{time.Millisecond, time.Second, "bursts.period: must be 0 (off) or at least 10ms, got 1ms"},
		{time.Second, time.Second, "bursts.period: must be shorter than collection_interval (1s), got 1s"},
	} {
		err := ValidatePeriod(c.period, c.collection)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%v / %v: %v", c.period, c.collection, err)
		case c.want != "" && (err == nil || err.Error() != c.want):
			t.Errorf("%v / %v: got %v, want %q", c.period, c.collection, err, c.want)
		}
	}
}
