package recording // import "github.com/otelcol-iclens/otelcol-iclens/internal/recording"

import (
	"fmt"
	"time"
)

// OpenReplay opens the recording at path for the receiver named receiver (rnic, cpuuncore, gpu)
// and prepares its replay, streamed from the file (Player): it refuses a file that is missing, unreadable, of another format or
// version, of another receiver, or without samples, with an error naming the file. Every receiver
// calls it from Start, so that a bad replay fails Start the same way everywhere.
func OpenReplay(path, receiver string, loop bool) (*Player, error) {
	src, h, err := openFileRecords(path)
	if err != nil {
		return nil, err
	}
	if h.Receiver != receiver {
		_ = src.close()
		return nil, fmt.Errorf("recording %s is of the %q receiver, not %s", path, h.Receiver, receiver)
	}
	p, err := newPlayer(src, h, "", loop)
	if err != nil {
		return nil, fmt.Errorf("recording %s: %w", path, err)
	}
	return p, nil
}

// CreateFor starts a recording of receiver's readings at path (see Create for how an existing
// file is kept). A receiver calls it once per Start and hands the Writer to every source it
// opens, however often it reconnects, so that one run is one file.
func CreateFor(path, receiver string, interval time.Duration) (*Writer, error) {
	return Create(path, Header{Receiver: receiver, Interval: Duration(interval)})
}
