package recording

import (
	"fmt"
	"time"
)

// OpenReplay opens the recording at path for the receiver named receiver (rnic, cpuuncore, gpu)
// and prepares its replay: it refuses a file that is missing, unreadable, of another format or
// version, of another receiver, or without samples, with an error naming the file. Every receiver
// calls it from Start, so that a bad replay fails Start the same way everywhere.
func OpenReplay(path, receiver string, loop bool) (*Player, error) {
	rec, err := Open(path)
	if err != nil {
		return nil, err
	}
	if rec.Header.Receiver != receiver {
		return nil, fmt.Errorf("recording %s is of the %q receiver, not %s", path, rec.Header.Receiver, receiver)
	}
	p, err := NewPlayer(rec, "", loop)
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
