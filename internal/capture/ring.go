package capture // import "github.com/otelcol-iclens/otelcol-iclens/internal/capture"

import (
	"fmt"
	"os"
	"time"

	"go.opentelemetry.io/collector/component"

	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// What every receiver with bursts.capture shares: the window's default and bounds, the ring's
// memory bound, and the ring as the extension sees it.
const (
	// DefaultWindow is bursts.capture_window's default: the last few seconds, a few training
	// steps (a JANOG step is 600 ms) and the scrapes around them.
	DefaultWindow = 5 * time.Second
	// MaxWindow bounds bursts.capture_window: the ring is a flight recorder of the last
	// seconds, not a recording (recording.write is); its memory is bounded anyway (MaxRingBytes).
	MaxWindow = time.Minute
	// MaxRingBytes bounds a ring's memory: an 8-port node's rnic passes at 10 ms are about 40 KB
	// a second encoded (8 ports x 4 counters x 100 passes), a two-socket Sapphire Rapids' uncore
	// groups at 10 ms about 0.5 MB (80 groups); far below it either way.
	MaxRingBytes = 64 << 20
)

// ValidateWindow checks bursts.capture_window. A window shorter than the receiver's
// collection_interval is not refused (the 5 s default is, beside a 10 s interval): the ring keeps
// the scrape the window starts in anyway, so it keeps Window.
func ValidateWindow(window time.Duration) error {
	switch {
	case window < 0:
		return fmt.Errorf("bursts.capture_window: must not be negative, got %v", window)
	case window > MaxWindow:
		return fmt.Errorf("bursts.capture_window: must be at most %v, got %v", MaxWindow, window)
	}
	return nil
}

// Window is the span a receiver's ring keeps: bursts.capture_window, or its collection_interval
// where that is longer (the last scrape and the one before it).
func Window(window, collection time.Duration) time.Duration { return max(window, collection) }

// RingSource is a receiver's recording.Ring as the extension sees it. It holds nothing of the
// receiver's scraper, so that a trigger racing the receiver's shutdown writes what the ring has
// and touches nothing closed.
type RingSource struct {
	Ring *recording.Ring
	// Receiver is the receiver's type, the recording header's receiver (a replay checks it).
	Receiver string
	// Interval is the receiver's collection_interval, the header's interval.
	Interval time.Duration
}

// WriteCapture writes the ring (Source).
func (r RingSource) WriteCapture(path, note string) (string, error) {
	host, _ := os.Hostname()
	return r.Ring.WriteTo(path, recording.Header{Receiver: r.Receiver, Host: host,
		Created: time.Now().UTC(), Interval: recording.Duration(r.Interval), Note: note})
}

// RegisterRing hands src to the capture extension ext as self's ring, and returns what takes it
// back (the receiver's Shutdown). It fails where the host has no such extension, as a storage
// extension's user fails Start.
func RegisterRing(host component.Host, ext, self component.ID, src RingSource) (unregister func(), err error) {
	hub, err := Find(host, ext)
	if err != nil {
		return nil, err
	}
	return hub.Register(self, src), nil
}
