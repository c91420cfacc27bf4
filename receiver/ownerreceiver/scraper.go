package ownerreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver"

import (
	"context"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/receiver"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/internal/owner"
	"github.com/otelcol-iclens/otelcol-iclens/receiver/ownerreceiver/internal/metadata"
)

// ownerScraper emits the resolver's latest snapshot. A scrape reads nothing: the resolver refreshes
// on its own ticker (dcgm-exporter's kubernetes.go dials the kubelet inside every scrape, its
// "TODO: moved out of the critical path").
type ownerScraper struct {
	cfg      *Config
	settings receiver.Settings
	logger   *zap.Logger
	mb       *metadata.MetricsBuilder
	resolver *owner.Resolver
	// last holds the series of the previous scrape, so that an ownership that ended is emitted
	// once more with value 0.
	last map[owner.Assignment]struct{}
}

func newOwnerScraper(cfg *Config, set receiver.Settings) *ownerScraper {
	return &ownerScraper{cfg: cfg, settings: set, logger: set.Logger, mb: metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set)}
}

func (s *ownerScraper) start(ctx context.Context, _ component.Host) error {
	r, err := owner.NewResolver(s.cfg.Config, s.cfg.RootPath, s.logger)
	if err != nil {
		return err
	}
	s.resolver = r
	var on []string
	for name, enabled := range map[string]bool{"kubernetes": s.cfg.Kubernetes.Enabled, "slurm": s.cfg.Slurm.Enabled, "scontrol": s.cfg.Scontrol.Enabled, "process": s.cfg.Process.Enabled, "static": s.cfg.Static.Enabled} {
		if enabled {
			on = append(on, name)
		}
	}
	s.logger.Info("owner sources", zap.Strings("enabled", on), zap.Duration("refresh_interval", s.cfg.RefreshInterval))
	r.Start(ctx)
	return nil
}

func (s *ownerScraper) shutdown(context.Context) error {
	if s.resolver == nil {
		return nil
	}
	return s.resolver.Shutdown()
}

func (s *ownerScraper) scrape(context.Context) (pmetric.Metrics, error) {
	now := pcommon.NewTimestampFromTime(time.Now())
	snap := s.resolver.Snapshot()
	current := make(map[owner.Assignment]struct{}, len(snap.Assignments))
	var ended []owner.Assignment
	for _, a := range snap.Assignments {
		current[a] = struct{}{}
	}
	for a := range s.last {
		if _, ok := current[a]; !ok {
			ended = append(ended, a)
		}
	}
	s.last = current
	if s.cfg.OwnerResource {
		return s.emitPerOwner(now, snap.Assignments, ended), nil
	}
	for _, a := range snap.Assignments {
		s.record(now, a, 1)
	}
	for _, a := range ended {
		s.record(now, a, 0)
	}
	return s.mb.Emit(), nil
}

func (s *ownerScraper) record(now pcommon.Timestamp, a owner.Assignment, v int64) {
	o := a.Owner
	s.mb.RecordInterconnectOwnerDataPoint(now, v,
		metadata.MapAttributeComponent[a.Component], a.Device, a.PCIBusID,
		metadata.MapAttributeOwnerKind[string(o.Kind)], metadata.MapAttributeOwnerSource[string(o.Source)],
		o.Namespace, o.Pod, o.Container, o.JobID, o.User, o.Partition)
}
