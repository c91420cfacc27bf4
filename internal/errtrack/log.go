package errtrack

import (
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Log is the one way a receiver says something once. Every call takes an explicit key (a file, a
// device, a series: what the message is about), a constant message and zap fields for the values,
// so that messages stay searchable and de-duplication never depends on formatted text.
//
// It decides only what is logged. Returning errors to scraperhelper is the receiver's business:
// a failure is returned on every scrape it happens (scraperhelper counts the points it cost in
// otelcol_scraper_errored_metric_points), and logged here only when it starts, changes or ends.
// It is not safe for concurrent use.
type Log struct {
	logger  *zap.Logger
	failing *tracker
	said    map[string]struct{}
}

// NewLog returns a Log writing to logger. Lines carry the caller of the Log's method, not Log.
func NewLog(logger *zap.Logger) *Log {
	return &Log{logger: logger.WithOptions(zap.AddCallerSkip(1)), failing: newTracker(), said: map[string]struct{}{}}
}

// Fail logs msg at Warn (data is lost) with err and fields when key starts failing or fails with
// another error, and reports whether it logged.
func (l *Log) Fail(key, msg string, err error, fields ...zap.Field) bool {
	if !l.failing.Fail(key, err) {
		return false
	}
	l.logger.Warn(msg, append([]zap.Field{zap.String("key", key), zap.Error(err)}, fields...)...)
	return true
}

// Recover logs msg at Info when key was failing, and reports whether it was.
func (l *Log) Recover(key, msg string, fields ...zap.Field) bool {
	if !l.failing.Recover(key) {
		return false
	}
	l.logger.Info(msg, append([]zap.Field{zap.String("key", key)}, fields...)...)
	return true
}

// Once logs msg at level the first time it is called for key (a fact about the hardware: a
// counter the device does not have, a kernel bug corrected), and reports whether it logged.
func (l *Log) Once(key string, level zapcore.Level, msg string, fields ...zap.Field) bool {
	if _, ok := l.said[key]; ok {
		return false
	}
	l.said[key] = struct{}{}
	l.logger.Log(level, msg, append([]zap.Field{zap.String("key", key)}, fields...)...)
	return true
}

// Failing returns the number of keys failing now.
func (l *Log) Failing() int { return l.failing.Failing() }

// IsFailing reports whether key is failing now.
func (l *Log) IsFailing(key string) bool {
	_, ok := l.failing.failing[key]
	return ok
}

// Forget drops the failures and facts of every key for which keep returns false (the files of a
// device that is gone), so that the Log does not grow without bound and a device that comes back
// is reported afresh.
func (l *Log) Forget(keep func(key string) bool) {
	l.failing.Forget(keep)
	for k := range l.said {
		if !keep(k) {
			delete(l.said, k)
		}
	}
}
