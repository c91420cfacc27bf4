// Package capturetest is a capture extension for the tests of the receivers that keep a capture
// ring (bursts.capture): it keeps what registers, and the test writes a ring itself.
package capturetest // import "github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/recording"
)

// ID is the extension's id in Host.
var ID = component.MustNewID("capture")

// Hub keeps the sources registered with it, by the registering component's id.
type Hub struct {
	Sources map[component.ID]capture.Source
}

func (h *Hub) Start(context.Context, component.Host) error { return nil }
func (h *Hub) Shutdown(context.Context) error              { return nil }

// Register keeps s under id until the returned function is called.
func (h *Hub) Register(id component.ID, s capture.Source) func() {
	h.Sources[id] = s
	return func() { delete(h.Sources, id) }
}

// Trigger writes nothing: a test calls a source's WriteCapture itself.
func (h *Hub) Trigger(context.Context, string) ([]capture.Written, error) { return nil, nil }

type host struct {
	component.Host
	exts map[component.ID]component.Component
}

func (h host) GetExtensions() map[component.ID]component.Component { return h.exts }

// NewHost returns a Hub and a host that has it as the extension ID.
func NewHost() (*Hub, component.Host) {
	hub := &Hub{Sources: map[component.ID]capture.Source{}}
	return hub, host{Host: componenttest.NewNopHost(), exts: map[component.ID]component.Component{ID: hub}}
}

// PassesInTheirSamples opens the capture at path and checks that each fast-sampler pass lies in
// the interval of the sample it is recorded in: not after the sample, nor more than a second
// before the previous one, and none in the first sample (a replay's passes are retimed with its
// samples). bursts returns a sample's passes from its JSON (the receiver's own payload type);
// each, when not nil, is called for every pass, for a receiver's own checks. It returns the
// number of passes.
func PassesInTheirSamples(t *testing.T, path string, bursts func(sample json.RawMessage) *recording.SubSamples,
	each func(b *recording.SubSamples, pass int)) int {
	t.Helper()
	rec, err := recording.Open(path)
	require.NoError(t, err)
	samples := rec.Samples()
	require.NotEmpty(t, samples, path)
	passes := 0
	for i, smp := range samples {
		b := bursts(smp.Sample)
		for p := range b.Len() {
			require.Positive(t, i, "passes before the first sample")
			at := b.Time(p)
			assert.False(t, at.After(smp.Time), "pass %v after its sample %v", at, smp.Time)
			assert.True(t, at.After(samples[i-1].Time.Add(-time.Second)), "pass %v long before its sample %v", at, smp.Time)
			if each != nil {
				each(b, p)
			}
			passes++
		}
	}
	return passes
}
