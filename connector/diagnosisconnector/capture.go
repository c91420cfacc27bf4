package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// A verdict is decided on interval averages; what led to it (a port saturated for 40 ms of every
// step, a host memory burst) is inside the interval. With capture set the connector asks the
// capture extension, when it raises a fault verdict, to write the rings the receivers keep: the
// seconds before the verdict at full resolution, replayable later with the verdict's sentence as
// the recording's note. The extension's min_interval keeps a verdict that comes and goes from
// writing a file every evaluation. Only the receivers of this collector keep rings: on a gateway
// that diagnoses other nodes' metrics nothing is registered, and the extension says so.

// faultVerdict reports whether raising v is worth a capture: any verdict but the healthy ones.
func faultVerdict(v string) bool {
	return v != "" && v != verdict.HealthyGPUDirect && v != verdict.Idle
}

// captureRaised asks the extension to write the rings for the fault verdicts the last evaluation
// raised, outside the engine's lock (the writes go to disk).
func (e *engine) captureRaised(ctx context.Context) {
	e.mu.Lock()
	raised := e.raised
	e.raised = nil
	hub := e.capture
	e.mu.Unlock()
	if hub == nil || len(raised) == 0 {
		return
	}
	written, err := hub.Trigger(ctx, strings.Join(raised, "; "))
	switch {
	case errors.Is(err, capture.ErrTooSoon):
		e.logger.Debug("diagnosis: a verdict was raised within the capture's min_interval; not captured", zap.Error(err))
	case err != nil:
		e.logger.Warn("diagnosis: cannot capture the rings behind a verdict", zap.Error(err))
	default:
		e.logger.Info("diagnosis: captured the rings behind a verdict", zap.Strings("raised", raised), zap.Int("recordings", len(written)))
	}
}
