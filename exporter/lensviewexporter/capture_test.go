package lensviewexporter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
)

// fakeHub answers triggers as the capture extension does (extension/captureextension): one
// Written per ring, ErrTooSoon within min_interval.
type fakeHub struct {
	reasons []string
	err     error
}

func (h *fakeHub) Register(component.ID, capture.Source) func() { return func() {} }
func (h *fakeHub) Trigger(_ context.Context, reason string) ([]capture.Written, error) {
	if h.err != nil {
		return nil, h.err
	}
	h.reasons = append(h.reasons, reason)
	return []capture.Written{{Source: "rnic", Path: "/var/lib/otelcol-iclens/captures/x-rnic.jsonl.gz"}}, nil
}

func post(t *testing.T, url string, header map[string]string) (int, captureResult, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var res captureResult
	_ = json.Unmarshal(b, &res)
	return resp.StatusCode, res, string(b)
}

// TestCaptureOnDemand: with capture set, POST /api/capture from the page (its header) triggers
// the extension with the view's reason and answers the files written; a trigger within
// min_interval is a 429 saying so; a request without the header, or from another site's page,
// triggers nothing.
func TestCaptureOnDemand(t *testing.T) {
	st := newTestStore(t, nil)
	hub := &fakeHub{}
	srv := httptest.NewServer(newHandler(st.store, 2*time.Second, newCaptureHandler(hub, zap.NewNop())))
	t.Cleanup(srv.Close)

	_, body := get(t, srv.URL+"/api/capture")
	assert.JSONEq(t, `{"enabled": true}`, string(body))

	code, res, raw := post(t, srv.URL+"/api/capture", map[string]string{captureHeader: "1", "Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusOK, code, raw)
	assert.Equal(t, []capture.Written{{Source: "rnic", Path: "/var/lib/otelcol-iclens/captures/x-rnic.jsonl.gz"}}, res.Written)
	assert.Equal(t, []string{captureReason}, hub.reasons)

	code, _, _ = post(t, srv.URL+"/api/capture", nil)
	assert.Equal(t, http.StatusForbidden, code, "no header: a form or a script of another site")
	code, _, _ = post(t, srv.URL+"/api/capture", map[string]string{captureHeader: "1", "Sec-Fetch-Site": "cross-site"})
	assert.Equal(t, http.StatusForbidden, code)
	assert.Len(t, hub.reasons, 1, "neither triggered")

	hub.err = fmt.Errorf("%w (1m0s, the previous at 2026-12-03T20:00:00Z)", capture.ErrTooSoon)
	code, res, raw = post(t, srv.URL+"/api/capture", map[string]string{captureHeader: "1"})
	assert.Equal(t, http.StatusTooManyRequests, code, raw)
	assert.Contains(t, res.Error, "less than min_interval ago")
	assert.Equal(t, []capture.Written{}, res.Written)

	code, _, _ = post(t, srv.URL+"/api/nodes", map[string]string{captureHeader: "1"})
	assert.Equal(t, http.StatusMethodNotAllowed, code, "the rest stays read-only")
}

// TestCaptureUnset: without capture the page has no button and the view refuses the POST.
func TestCaptureUnset(t *testing.T) {
	_, srv := serve(t)
	_, body := get(t, srv.URL+"/api/capture")
	assert.JSONEq(t, `{"enabled": false}`, string(body))
	code, _, raw := post(t, srv.URL+"/api/capture", map[string]string{captureHeader: "1"})
	assert.Equal(t, http.StatusMethodNotAllowed, code)
	assert.Contains(t, raw, "capture is not configured")
}
