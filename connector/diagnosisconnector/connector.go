package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/connector"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.uber.org/zap"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
)

// engine is the diagnosis of one configured connector. The collector creates one connector
// instance per pair of pipelines (metrics -> metrics, metrics -> logs) with the same *Config; they
// share one engine (as the OTLP receiver shares its server), so that the nodes are evaluated once
// and the logs describe exactly the verdicts the metrics carry.
type engine struct {
	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder

	mu    sync.Mutex
	nodes map[string]*node

	metricsOut consumer.Metrics
	logsOut    consumer.Logs

	instances int
	running   bool
	stop      chan struct{}
	done      chan struct{}
}

var (
	enginesMu sync.Mutex
	engines   = map[*Config]*engine{}
)

// engineFor returns the engine of cfg, creating it, and counts one more connector instance on it.
func engineFor(set connector.Settings, cfg *Config) *engine {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	e := engines[cfg]
	if e == nil {
		e = &engine{cfg: cfg, logger: set.Logger, nodes: map[string]*node{},
			mb: metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set)}
		engines[cfg] = e
	}
	e.instances++
	return e
}

// diagnosis is one connector instance: the pipelines' view of the shared engine.
type diagnosis struct {
	e *engine
}

var _ connector.Metrics = (*diagnosis)(nil)

func (d *diagnosis) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (d *diagnosis) Start(context.Context, component.Host) error {
	e := d.e
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e.running {
		return nil
	}
	e.running = true
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	go e.loop(e.stop, e.done)
	return nil
}

func (d *diagnosis) Shutdown(context.Context) error {
	e := d.e
	enginesMu.Lock()
	e.instances--
	last := e.instances <= 0
	var stop, done chan struct{}
	if last {
		delete(engines, e.cfg)
		if e.running {
			stop, done = e.stop, e.done
			e.running = false
		}
	}
	enginesMu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	return nil
}

func (d *diagnosis) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	d.e.ingest(md, time.Now())
	return nil
}

func (e *engine) loop(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(e.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			e.evaluateAndSend(now)
		}
	}
}

// ingest keeps what the diagnosis reads of md, per node.
func (e *engine) ingest(md pmetric.Metrics, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		if !readsAny(rm.ScopeMetrics()) {
			continue
		}
		key := nodeKey(rm.Resource())
		n := e.nodes[key]
		if n == nil {
			e.makeRoom()
			n = newNode(key)
			e.nodes[key] = n
		}
		n.ingest(rm.Resource(), rm.ScopeMetrics(), now.UnixNano())
	}
}

// makeRoom makes room for one more node: beyond max_nodes the one seen least recently goes.
func (e *engine) makeRoom() {
	for len(e.nodes) >= e.cfg.MaxNodes {
		var oldest *node
		for _, n := range e.nodes {
			if oldest == nil || n.lastSeen < oldest.lastSeen {
				oldest = n
			}
		}
		e.logger.Debug("diagnosis: forgetting a node to stay within max_nodes", zap.String("node", oldest.name), zap.Int("max_nodes", e.cfg.MaxNodes))
		delete(e.nodes, oldest.name)
	}
}

func (e *engine) evaluateAndSend(now time.Time) {
	md, ld := e.evaluate(now)
	ctx := context.Background()
	var errs []error
	if e.metricsOut != nil && md.DataPointCount() > 0 {
		errs = append(errs, e.metricsOut.ConsumeMetrics(ctx, md))
	}
	if e.logsOut != nil && ld.LogRecordCount() > 0 {
		errs = append(errs, e.logsOut.ConsumeLogs(ctx, ld))
	}
	if err := errors.Join(errs...); err != nil {
		e.logger.Warn("diagnosis: the next consumer refused the verdicts", zap.Error(err))
	}
}

// evaluate decides every node's verdicts at now and returns them as metrics and log records.
func (e *engine) evaluate(now time.Time) (pmetric.Metrics, plog.Logs) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ts := pcommon.NewTimestampFromTime(now)
	t := now.UnixNano()
	ld := plog.NewLogs()
	names := make([]string, 0, len(e.nodes))
	for name, n := range e.nodes {
		if n.lastSeen <= t-e.cfg.StaleAfter.Nanoseconds() {
			delete(e.nodes, name)
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		n := e.nodes[name]
		n.forget(t, e.cfg.StaleAfter.Nanoseconds())
		v := n.view(e.cfg, t)
		holding := e.decide(n, conditions(e.cfg.Thresholds, v), ts)
		ev := evidence(v)
		for k, x := range ev {
			e.mb.RecordDiagnosisEvidenceDataPoint(ts, x, metadata.MapAttributeRatio[k.verdict], k.device)
		}
		res := pcommon.NewResource()
		n.resource.CopyTo(res.Attributes())
		e.mb.EmitForResource(metadata.WithResource(res))
		e.logChanges(ld, n, v, ev, holding, ts)
	}
	return e.mb.Emit(), ld
}

// decide applies hold to the conditions, records the verdict points, and returns the verdicts
// that hold.
func (e *engine) decide(n *node, cond map[verdictKey]bool, ts pcommon.Timestamp) map[verdictKey]bool {
	holding := map[verdictKey]bool{}
	for k := range n.streak {
		if _, ok := cond[k]; !ok {
			delete(n.streak, k)
		}
	}
	keys := make([]verdictKey, 0, len(cond))
	for k := range cond {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].device != keys[j].device {
			return keys[i].device < keys[j].device
		}
		return keys[i].verdict < keys[j].verdict
	})
	for _, k := range keys {
		if !e.cfg.Enabled(k.verdict) {
			continue
		}
		if cond[k] {
			n.streak[k]++
		} else {
			n.streak[k] = 0
		}
		val := int64(0)
		if n.streak[k] >= e.cfg.Hold {
			val = 1
			holding[k] = true
		}
		e.mb.RecordDiagnosisVerdictDataPoint(ts, val, metadata.MapAttributeVerdict[k.verdict], k.device)
	}
	return holding
}

func (e *engine) setMetrics(next consumer.Metrics) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.metricsOut = next
}

func (e *engine) setLogs(next consumer.Logs) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.logsOut = next
}
