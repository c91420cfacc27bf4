package gpureceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/gpureceiver"

import (
	"errors"
	"fmt"

	"go.opentelemetry.io/collector/scraper/scrapererror"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/otelcol-iclens/otelcol-iclens/internal/errtrack"
)

// Log messages: constant, the values go in fields.
const (
	msgSeriesMissing     = "GPU series not collected"
	msgSeriesBack        = "GPU series collected again"
	msgNotProvided       = "GPU field not provided by this GPU or library; it is not read"
	msgNoLibrary         = "No GPU metrics: no GPU library could be used; trying again later"
	msgLost              = "Lost the GPU library; reconnecting at the next scrape"
	msgRediscoveryFailed = "GPU rediscovery failed; trying again after retry_interval"
	msgRecordingFailed   = "Writing the GPU recording failed; the live metrics go on"
)

// faults is how a source reports what it could not read: each failure is logged when it starts,
// changes and ends (errtrack.Log), and returned on every poll it happens with the points it cost,
// so that scraperhelper counts them; what the GPU or library does not provide at all leaves the
// plan with one Info line and is no error.
type faults struct {
	log  *errtrack.Log
	errs scrapererror.ScrapeErrors
}

func newFaults(logger *zap.Logger) *faults { return &faults{log: errtrack.NewLog(logger)} }

// fail records a failure of key that cost points points in this poll.
func (f *faults) fail(key string, err error, points int) {
	f.log.Fail(key, msgSeriesMissing, err)
	f.errs.AddPartial(points, fmt.Errorf("%s: %w", key, err))
}

// missing logs a series that discovery could not plan (a profiling module not loaded, a watch
// refused): said when it starts or changes, not returned per scrape, since nothing was read.
func (f *faults) missing(key string, err error) { f.log.Fail(key, msgSeriesMissing, err) }

// recover says that key works again, if it was failing.
func (f *faults) recover(key string) { f.log.Recover(key, msgSeriesBack) }

// notProvided says once that key is not provided (NOT_SUPPORTED) and is left out of the plan.
func (f *faults) notProvided(key, reason string) {
	f.log.Once(key, zapcore.InfoLevel, msgNotProvided, zap.String("reason", reason))
}

// take returns the failures of the poll and starts the next one.
func (f *faults) take() error {
	err := f.errs.Combine()
	f.errs = scrapererror.ScrapeErrors{}
	return err
}

// lostError marks a poll error that means the source as a whole is gone (nv-hostengine
// restarted, connection lost): the scraper closes it and opens it again.
type lostError struct{ err error }

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

func sourceLost(err error) error { return &lostError{err} }

func isSourceLost(err error) bool {
	var l *lostError
	return errors.As(err, &l)
}

// joinPollErrors combines the errors of two sources' polls (DCGM and the NVML completing it),
// keeping the points each partial error says it cost.
func joinPollErrors(errs ...error) error {
	var se scrapererror.ScrapeErrors
	for _, err := range errs {
		var p scrapererror.PartialScrapeError
		switch {
		case err == nil:
		case errors.As(err, &p):
			se.AddPartial(p.Failed, err)
		default:
			se.Add(err)
		}
	}
	return se.Combine()
}
