package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/adapter"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/fileconsumer"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/stanza/fileconsumer/attrs"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.uber.org/zap"
)

// inspectorFilePattern is the name the Inspector gives its dump of one process
// (inspector.cc inspectorDumpThread::inspectorStateDumpJSON: "%s/%s-pid%d.log", the dump
// directory, gethostname() and getpid()).
const inspectorFilePattern = "*-pid*.log"

// inspectorSource tails the dump directory with contrib's stanza file consumer (rotation,
// truncation, fingerprints and offsets kept in a storage extension) and feeds every complete
// line to the aggregator.
type inspectorSource struct {
	cfg     InspectorConfig
	host    string // this host's name, for local_host_only
	logger  *zap.Logger
	agg     *aggregator
	now     func() time.Time
	manager *fileconsumer.Manager
	client  storage.Client

	mu   sync.Mutex
	said map[string]struct{} // file + problem kind already logged
}

func newInspectorSource(cfg InspectorConfig, host string, logger *zap.Logger, agg *aggregator, now func() time.Time) *inspectorSource {
	return &inspectorSource{cfg: cfg, host: host, logger: logger, agg: agg, now: now, said: map[string]struct{}{}}
}

// fileConsumerConfig is the file consumer's configuration for the dump directory.
func (s *inspectorSource) fileConsumerConfig() *fileconsumer.Config {
	fc := fileconsumer.NewConfig()
	pattern := inspectorFilePattern
	if s.cfg.LocalHostOnly {
		pattern = s.host + "-pid*.log"
	}
	fc.Include = []string{filepath.Join(s.cfg.DumpDir, pattern)}
	fc.PollInterval = s.cfg.PollInterval
	// A process's whole file matters, not only what it writes after the collector starts; with a
	// storage extension the saved offsets take precedence over this.
	fc.StartAt = "beginning"
	// No forced flush: a line is taken only once its newline is written (json.cc jsonNewline), so
	// a record torn by a crash or caught mid-write is never parsed; it is read whole once done.
	fc.FlushPeriod = 0
	// A file truncated in place (copytruncate) is read again from its start, not ignored until it
	// grows past the old offset.
	fc.OnTruncate = fileconsumer.OnTruncateReadWholeFile
	fc.Resolver = attrs.Resolver{IncludeFileName: true}
	return fc
}

func (s *inspectorSource) start(ctx context.Context, host component.Host, set component.TelemetrySettings, id component.ID) error {
	m, err := s.fileConsumerConfig().Build(set, s.consume)
	if err != nil {
		return fmt.Errorf("inspector.dump_dir: %w", err)
	}
	client, err := adapter.GetStorageClient(ctx, host, s.cfg.Storage, id)
	if err != nil {
		return fmt.Errorf("inspector.storage: %w", err)
	}
	s.client = client
	if err := m.Start(client); err != nil {
		return err
	}
	s.manager = m
	return nil
}

func (s *inspectorSource) shutdown(ctx context.Context) error {
	var errs []error
	if s.manager != nil {
		errs = append(errs, s.manager.Stop())
	}
	if s.client != nil {
		errs = append(errs, s.client.Close(ctx))
	}
	return errors.Join(errs...)
}

// consume is the file consumer's emit callback: the complete lines of one file.
func (s *inspectorSource) consume(_ context.Context, tokens [][]byte, attributes map[string]any, _ int64, _ []int64) error {
	file, _ := attributes[attrs.LogFileName].(string)
	now := s.now()
	for _, tok := range tokens {
		if len(tok) == 0 {
			continue
		}
		r, err := parseRecord(tok)
		switch {
		case err == nil:
			s.agg.add(r, now)
		case errors.Is(err, errUnsupportedVersion):
			s.agg.count(outcomeUnsupportedVersion)
			s.sayOnce(file, "version", "NCCL Inspector file in a format this receiver does not read; its records are skipped", err)
		case errors.Is(err, errNotAnOperation):
			s.agg.count(outcomeIgnored)
		default:
			s.agg.count(outcomeMalformed)
			s.sayOnce(file, "malformed", "NCCL Inspector record unreadable; that record is skipped (further ones in this file are counted in nccl.inspector.records)", err)
		}
	}
	return nil
}

// sayOnce logs a file's problem of one kind once, so that a bad file does not flood the log.
func (s *inspectorSource) sayOnce(file, kind, msg string, err error) {
	s.mu.Lock()
	_, said := s.said[file+"\x00"+kind]
	s.said[file+"\x00"+kind] = struct{}{}
	s.mu.Unlock()
	if !said {
		s.logger.Warn(msg, zap.String("file", file), zap.Error(err))
	}
}
