package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

import (
	"errors"
	"net/http"

	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
)

// The Capture button: with capture set, the page asks the capture extension to write the rings
// the receivers keep (their last seconds at full resolution) as recordings, so that a burst the
// operator is looking at can be replayed and looked at later. The view stays read-only for
// everything else. A POST from another site's page must not trigger it (it writes files): the
// request must carry captureHeader, which a cross-origin page cannot send without a CORS
// preflight the view never answers, and a browser's Sec-Fetch-Site, where it sends one, must
// say same-origin.

// captureHeader is the header the page's request carries.
const captureHeader = "X-Iclens-Capture"

// captureReason is the note the recordings carry.
const captureReason = "on demand from the view"

// captureHandler triggers the extension; a nil one (capture unset) answers that there is none.
type captureHandler struct {
	hub    capture.Hub
	logger *zap.Logger
}

func newCaptureHandler(hub capture.Hub, logger *zap.Logger) *captureHandler {
	if hub == nil {
		return nil
	}
	return &captureHandler{hub: hub, logger: logger}
}

// captureState is GET /api/capture: whether the page shows the button.
type captureState struct {
	Enabled bool `json:"enabled"`
}

// captureResult is what POST /api/capture answers.
type captureResult struct {
	Written []capture.Written `json:"written"`
	Error   string            `json:"error,omitempty"`
}

func (c *captureHandler) serveState(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, captureState{Enabled: c != nil})
}

func (c *captureHandler) serveTrigger(w http.ResponseWriter, r *http.Request) {
	switch {
	case c == nil:
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "capture is not configured (set capture in the lensview exporter)", http.StatusMethodNotAllowed)
		return
	case r.Header.Get(captureHeader) == "":
		http.Error(w, "a capture request carries the "+captureHeader+" header", http.StatusForbidden)
		return
	case r.Header.Get("Sec-Fetch-Site") != "" && r.Header.Get("Sec-Fetch-Site") != "same-origin":
		http.Error(w, "a capture is asked from the view's own page", http.StatusForbidden)
		return
	}
	written, err := c.hub.Trigger(r.Context(), captureReason)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if errors.Is(err, capture.ErrTooSoon) {
			w.WriteHeader(http.StatusTooManyRequests)
		} else {
			c.logger.Warn("Cannot capture", zap.Error(err))
			w.WriteHeader(http.StatusInternalServerError)
		}
		writeJSON(w, captureResult{Written: []capture.Written{}, Error: err.Error()})
		return
	}
	writeJSON(w, captureResult{Written: written})
}
