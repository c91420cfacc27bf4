package filestorageextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/filestorageextension"

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// checkedStorage is contrib's file_storage, its files checked in Start, before any component
// gets a client (extensions start before the pipelines).
type checkedStorage struct {
	storage.Extension
	directory string
	logger    *zap.Logger
}

// Start checks the directory's database files, moves the damaged ones aside, then starts
// contrib's extension. A file that cannot be checked (another process holds it) is left to
// file_storage, which reports it as it always has.
func (c *checkedStorage) Start(ctx context.Context, host component.Host) error {
	for _, path := range c.databaseFiles() {
		c.checkOne(path, time.Now())
	}
	return c.Extension.Start(ctx, host)
}

func (c *checkedStorage) checkOne(path string, now time.Time) {
	res := checkDatabase(path)
	if res.err == nil {
		return
	}
	aside := path + "." + now.UTC().Format("20060102T150405.000Z") + ".damaged"
	if err := os.Rename(path, aside); err != nil {
		// Left in place: file_storage will fail on it as before, and this says which file.
		c.logger.Error("A damaged storage file cannot be moved aside; remove it to start with an empty queue",
			zap.String("file", path), zap.NamedError("damage", res.err), zap.Error(err))
		return
	}
	fields := []zap.Field{
		zap.String("file", path), zap.String("moved_to", aside), zap.NamedError("damage", res.err),
		zap.Int64("bytes", res.size), zap.Int("requests_readable", res.requests), zap.Int("items_readable", res.items),
	}
	if res.signal != "" {
		fields = append(fields, zap.String("signal", res.signal))
	}
	c.logger.Warn("Storage file is damaged: moved aside, a new empty one is used; what it held is lost unless recovered from the moved file", fields...)
}

// fileName is a name file_storage gives its databases (extension.go GetClient: kind_type_name
// [_name] sanitized, or a SHA-256 hex name when that is too long). Backups, damaged files and
// compaction temporaries are not databases in use.
var fileName = regexp.MustCompile(`^((receiver|processor|exporter|extension|connector|other)_[A-Za-z0-9._~-]+|[0-9a-f]{64})$`)

func (c *checkedStorage) databaseFiles() []string {
	entries, err := os.ReadDir(c.directory)
	if err != nil {
		return nil // file_storage's Validate and Start say why
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() || !fileName.MatchString(name) ||
			strings.HasSuffix(name, ".backup") || strings.HasSuffix(name, ".damaged") {
			continue
		}
		out = append(out, filepath.Join(c.directory, name))
	}
	return out
}
