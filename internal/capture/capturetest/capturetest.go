// Package capturetest is a capture extension for the tests of the receivers that keep a capture
// ring (bursts.capture): it keeps what registers, and the test writes a ring itself.
package capturetest // import "github.com/otelcol-iclens/otelcol-iclens/internal/capture/capturetest"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
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
