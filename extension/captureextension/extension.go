package captureextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/captureextension"

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
)

// suffix ends every recording the extension writes; pruning removes only those.
const suffix = ".jsonl.gz"

// captureExtension is the capture.Hub the components find in the host.
type captureExtension struct {
	cfg    *Config
	logger *zap.Logger
	now    func() time.Time

	mu      sync.Mutex
	sources map[component.ID]capture.Source
	last    time.Time // the previous accepted trigger
}

var _ capture.Hub = (*captureExtension)(nil)

func newCaptureExtension(cfg *Config, set extension.Settings) *captureExtension {
	return &captureExtension{cfg: cfg, logger: set.Logger, now: time.Now, sources: map[component.ID]capture.Source{}}
}

// Start checks the directory: a path that is there and is not a directory fails Start, naming
// it, rather than every capture later. The directory itself is made at the first capture, so
// that a collector that never captures leaves nothing on the disk.
func (e *captureExtension) Start(context.Context, component.Host) error {
	if fi, err := os.Stat(e.cfg.Directory); err == nil && !fi.IsDir() {
		return fmt.Errorf("directory: %s is not a directory", e.cfg.Directory)
	}
	return nil
}

func (e *captureExtension) Shutdown(context.Context) error { return nil }

// Register adds a receiver's ring.
func (e *captureExtension) Register(id component.ID, s capture.Source) func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.sources[id] = s
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.sources[id] == s {
			delete(e.sources, id)
		}
	}
}

// Trigger writes every ring, one file each, and prunes the directory to max_files. The writes
// run under the extension's lock: two triggers at once would race for min_interval anyway.
func (e *captureExtension) Trigger(_ context.Context, reason string) ([]capture.Written, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if !e.last.IsZero() && now.Sub(e.last) < e.cfg.MinInterval {
		return nil, fmt.Errorf("%w (%s, the previous at %s)", capture.ErrTooSoon, e.cfg.MinInterval, e.last.UTC().Format(time.RFC3339))
	}
	e.last = now
	if err := os.MkdirAll(e.cfg.Directory, 0o700); err != nil {
		return nil, fmt.Errorf("directory: %w", err)
	}
	ids := make([]component.ID, 0, len(e.sources))
	for id := range e.sources {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b component.ID) int { return strings.Compare(a.String(), b.String()) })
	stamp := now.UTC().Format("20060102T150405.000Z")
	out := make([]capture.Written, 0, len(ids))
	for _, id := range ids {
		w := capture.Written{Source: id.String()}
		path := filepath.Join(e.cfg.Directory, stamp+"-"+fileSafe(id.String())+suffix)
		p, err := e.sources[id].WriteCapture(path, reason)
		if err != nil {
			w.Err = err.Error()
			e.logger.Warn("Cannot write the capture of a receiver", zap.String("receiver", id.String()), zap.String("reason", reason), zap.Error(err))
		} else {
			w.Path = p
			e.logger.Info("Wrote a capture", zap.String("receiver", id.String()), zap.String("reason", reason), zap.String("path", p))
		}
		out = append(out, w)
	}
	if len(ids) == 0 {
		e.logger.Info("Nothing to capture: no receiver names this extension in bursts.capture", zap.String("reason", reason))
	}
	e.prune()
	return out, nil
}

// prune removes the oldest of the extension's recordings beyond max_files. The names start with
// the trigger's UTC time, so their order is their age.
func (e *captureExtension) prune() {
	entries, err := os.ReadDir(e.cfg.Directory)
	if err != nil {
		e.logger.Warn("Cannot list the capture directory", zap.String("directory", e.cfg.Directory), zap.Error(err))
		return
	}
	var names []string
	for _, de := range entries {
		if de.Type().IsRegular() && strings.HasSuffix(de.Name(), suffix) {
			names = append(names, de.Name())
		}
	}
	slices.Sort(names)
	for _, n := range names[:max(0, len(names)-e.cfg.MaxFiles)] {
		if err := os.Remove(filepath.Join(e.cfg.Directory, n)); err != nil {
			e.logger.Warn("Cannot remove an old capture", zap.String("path", filepath.Join(e.cfg.Directory, n)), zap.Error(err))
		}
	}
}

// fileSafe turns a component id (rnic/fabric) into a file name part.
func fileSafe(id string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '_'
	}, id)
}
