// Package capture joins the components that keep a short full-resolution ring of their readings
// (the receivers with bursts.capture set: the fast sampler's passes and the scrapes around them)
// to the ones that know when it is worth keeping (the diagnosis connector raising a verdict, an
// operator pressing Capture in the view), through the capture extension. None of them knows the
// others: a receiver registers its ring with the extension, a connector or an exporter asks the
// extension to write every registered ring, and the extension decides where the files go and how
// many are kept. It is the storage extension's pattern (a component names an extension in its
// configuration and finds it in the host at Start).
package capture // import "github.com/otelcol-iclens/otelcol-iclens/internal/capture"

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
)

// Source is a ring a component keeps.
type Source interface {
	// WriteCapture writes the ring as a recording (internal/recording/FORMAT.md) at path, with
	// note in its header, and returns the file it wrote (the recording may pick a numbered name
	// beside an existing one). A ring with nothing in it yet returns an error saying so.
	WriteCapture(path, note string) (string, error)
}

// Written is what one Source did for one trigger.
type Written struct {
	// Source is the component that kept the ring (its component.ID).
	Source string `json:"source"`
	// Path is the recording written, empty where Err is set.
	Path string `json:"path,omitempty"`
	// Err says why nothing was written.
	Err string `json:"error,omitempty"`
}

// Hub is what the capture extension offers the components that name it.
type Hub interface {
	// Register adds a ring; the returned function removes it (a receiver's Shutdown).
	Register(id component.ID, s Source) (unregister func())
	// Trigger writes every registered ring now, noting why (a verdict, "on demand from the
	// view"). It refuses with ErrTooSoon a trigger within the extension's min_interval of the
	// previous one, so that a flapping verdict cannot fill the disk.
	Trigger(ctx context.Context, reason string) ([]Written, error)
}

// ErrTooSoon is Trigger's refusal of a trigger within min_interval of the previous one.
var ErrTooSoon = fmt.Errorf("a capture was written less than min_interval ago")

// Find returns the extension id as a Hub: the host must have it, and it must be a capture
// extension. The error names the id, as a component's Start returns it.
func Find(host component.Host, id component.ID) (Hub, error) {
	ext, ok := host.GetExtensions()[id]
	if !ok {
		return nil, fmt.Errorf("capture: extension %q is not configured in service.extensions", id)
	}
	hub, ok := ext.(Hub)
	if !ok {
		return nil, fmt.Errorf("capture: extension %q is not a capture extension", id)
	}
	return hub, nil
}
