package deliverywatchextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/deliverywatchextension"

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/extensioncapabilities"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// stateKey is where the exporters' states are kept in the storage client.
const stateKey = "exporters"

// stateStore keeps the exporters' states in a storage extension's client (as the filelog
// receiver keeps its offsets), written after every check that changed them.
type stateStore struct {
	client storage.Client
	saved  []byte
}

var _ extensioncapabilities.Dependent = (*deliveryWatch)(nil)

// Dependencies makes the collector start the storage extension first
// (extensioncapabilities.Dependent).
func (w *deliveryWatch) Dependencies() []component.ID {
	if w.cfg.Storage == nil {
		return nil
	}
	return []component.ID{*w.cfg.Storage}
}

// openStore gets the storage client and loads the states the last process left; a state that
// cannot be read is said and started over, never a failed start.
func (w *deliveryWatch) openStore(ctx context.Context, host component.Host) error {
	if w.cfg.Storage == nil {
		return nil
	}
	ext, ok := host.GetExtensions()[*w.cfg.Storage]
	if !ok {
		return fmt.Errorf("storage: no extension %q in the service", w.cfg.Storage.String())
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return fmt.Errorf("storage: extension %q is not a storage extension", w.cfg.Storage.String())
	}
	client, err := se.GetClient(ctx, component.KindExtension, w.id, "")
	if err != nil {
		return fmt.Errorf("storage: %w", err)
	}
	w.store = &stateStore{client: client}
	buf, err := client.Get(ctx, stateKey)
	if err != nil || buf == nil {
		if err != nil {
			w.logger.Warn("Cannot read the exporters' state from storage; starting over", zap.Error(err))
		}
		return nil
	}
	var states map[string]*exporterState
	if err := json.Unmarshal(buf, &states); err != nil {
		w.logger.Warn("The exporters' state in storage is unreadable; starting over", zap.Error(err))
		return nil
	}
	for name, s := range states {
		if s == nil {
			continue
		}
		s.restarted()
		w.exporters[name] = s
		if s.Failing {
			w.logger.Warn("Exporter sends were failing when the collector stopped; watching the outage on",
				zap.String("exporter", name), zap.Float64("queued", s.Last), zap.Time("since", s.Since))
		}
	}
	w.store.saved = buf
	return nil
}

// saveState writes the states when they changed; a failed write is said at Debug (the storage's
// own failures are the exporters' too, and said through them).
func (w *deliveryWatch) saveState(ctx context.Context) {
	if w.store == nil {
		return
	}
	buf, err := json.Marshal(w.exporters)
	if err != nil || bytes.Equal(buf, w.store.saved) {
		return
	}
	if err := w.store.client.Set(ctx, stateKey, buf); err != nil {
		w.logger.Debug("Cannot write the exporters' state to storage", zap.Error(err))
		return
	}
	w.store.saved = buf
}

func (w *deliveryWatch) closeStore(ctx context.Context) error {
	if w.store == nil {
		return nil
	}
	return w.store.client.Close(ctx)
}
