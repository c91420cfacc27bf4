package rnicreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/rnicreceiver"

import (
	"errors"
	"os"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/sysfs"
)

// readOutcome classifies a read.
type readOutcome uint8

const (
	readOK readOutcome = iota
	// readNotProvided: the hardware does not provide the counter (sysfs.ErrNotAvailable: "N/A (no
	// PMA)", EINVAL, EOPNOTSUPP): a fact, not a failure; the file leaves the plan.
	readNotProvided
	// readGone: the file is gone (ENOENT, or ENODEV on a descriptor kept open): the device went
	// away or was renamed.
	readGone
	readFailed
)

func classify(err error) readOutcome {
	switch {
	case err == nil:
		return readOK
	case errors.Is(err, sysfs.ErrNotAvailable), errors.Is(err, errors.ErrUnsupported):
		return readNotProvided
	case errors.Is(err, os.ErrNotExist):
		return readGone
	}
	return readFailed
}

// check handles the outcome of the read of key, which feeds points points, and reports whether
// its value can be recorded. A failure is returned with the scrape's error on every scrape it
// happens and logged when it starts or changes; a counter the hardware does not provide leaves
// the plan with one info line.
func (s *rnicScraper) check(run *scrapeRun, key string, points int, err error) bool {
	switch classify(err) {
	case readOK:
		s.log.Recover(key, "Readable again")
		return true
	case readNotProvided:
		s.unavailable[key] = true
		s.log.Once(key, zapcore.InfoLevel, "Counter not provided by the hardware; not read again", zap.Error(err))
		return false
	case readGone:
		run.gone = true
	}
	s.fail(run, key, points, err)
	return false
}

// fail adds err, which cost points points, to the scrape's error and logs it when it is news.
func (s *rnicScraper) fail(run *scrapeRun, key string, points int, err error) {
	s.log.Fail(key, "Read failed; its points are missing", err)
	if run.listed < maxListedErrors {
		run.listed++
		run.errs.AddPartial(points, err)
		return
	}
	// One log line holds all of a scrape's errors: past maxListedErrors (a node-wide failure on
	// thousands of ports) they are counted there.
	run.unlisted++
	run.unlistedPoints += points
}
