package diagnosisconnector

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// recordingHub is a capture extension that keeps the reasons it was triggered for.
type recordingHub struct{ reasons []string }

func (h *recordingHub) Start(context.Context, component.Host) error  { return nil }
func (h *recordingHub) Shutdown(context.Context) error               { return nil }
func (h *recordingHub) Register(component.ID, capture.Source) func() { return func() {} }
func (h *recordingHub) Trigger(_ context.Context, reason string) ([]capture.Written, error) {
	h.reasons = append(h.reasons, reason)
	return nil, nil
}

// TestCaptureWhenAFaultIsRaised: with capture set, the evaluation that raises a fault verdict
// (the simulator's congestion in bursts, scenario.BurstCongestionCase) triggers the capture
// extension once, with the verdict's sentence; the healthy AllReduce in bursts (BurstCase) raises
// healthy_gpudirect and triggers nothing.
func TestCaptureWhenAFaultIsRaised(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fault bool
	}{{scenario.BurstCongestionCase, true}, {scenario.BurstCase, false}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newTestEngine(t, testConfig())
			hub := &recordingHub{}
			e.capture = hub
			c := caseNamed(t, tc.name)
			start := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			host := scenario.HostName(c, scenario.Nodes[0])
			for i, pts := range c.Stream(0, 12, e.cfg.Interval.Seconds()) {
				at := start.Add(time.Duration(i) * e.cfg.Interval)
				e.ingest(toMetrics(host, c.Name, pts, at), at)
				e.evaluate(at.Add(10 * time.Millisecond))
				e.captureRaised(context.Background())
			}
			if !tc.fault {
				assert.Empty(t, hub.reasons)
				return
			}
			require.Len(t, hub.reasons, 1, "raised once, held after")
			assert.Contains(t, hub.reasons[0], "mlx5_0/1 transmits")
			assert.Contains(t, hub.reasons[0], "in every burst")
		})
	}
}

// TestCaptureNamesTheExtension: Start fails naming the extension capture names when the
// collector has none.
func TestCaptureNamesTheExtension(t *testing.T) {
	cfg := testConfig()
	id := component.MustNewID("capture")
	cfg.Capture = &id
	e := newTestEngine(t, cfg)
	err := (&diagnosis{e: e}).Start(context.Background(), componenttest.NewNopHost())
	assert.ErrorContains(t, err, `capture: extension "capture" is not configured`)
}
