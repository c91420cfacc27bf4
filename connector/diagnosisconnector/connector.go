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
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/tilinna/clock"

	"github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector/internal/metadata"
	"github.com/otelcol-iclens/otelcol-iclens/internal/capture"
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// engine is the diagnosis of one configured connector. The collector creates one connector
// instance per pair of pipelines (metrics -> metrics, metrics -> logs) with the same *Config; they
// share one engine (as the OTLP receiver shares its server), so that the nodes are evaluated once
// and the logs describe exactly the verdicts the metrics carry.
type engine struct {
	cfg    *Config
	logger *zap.Logger
	mb     *metadata.MetricsBuilder
	// clock is the wall clock; a test replaces it (as contrib's spanmetrics connector does) to
	// drive the evaluations tick by tick.
	clock     clock.Clock
	telemetry *metadata.TelemetryBuilder
	evictions *nodestate.Evictions
	// warnedSkew: refused points are said once (and counted in telemetry every time).
	warnedSkew bool
	// refusals counts the evaluations in a row whose verdicts the next consumer refused (an
	// exporter's full queue, a backend away). The first is said at Warn and the recovery at Info
	// with the count, so a backend that stays away costs two lines, not one an interval; the
	// exporter's own telemetry counts what it could not take. Only the evaluation loop touches it.
	refusals int

	mu    sync.Mutex
	nodes map[string]*node
	// raised are the sentences of the fault verdicts the last evaluation raised; capture, when
	// set, is asked to write the receivers' rings for them (capture.go).
	raised  []string
	capture capture.Hub

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
func engineFor(set connector.Settings, cfg *Config) (*engine, error) {
	enginesMu.Lock()
	defer enginesMu.Unlock()
	e := engines[cfg]
	if e == nil {
		tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
		if err != nil {
			return nil, err
		}
		e = &engine{cfg: cfg, logger: set.Logger, nodes: map[string]*node{}, clock: clock.Realtime(),
			mb: metadata.NewMetricsBuilder(cfg.MetricsBuilderConfig, set), telemetry: tb, evictions: nodestate.NewEvictions(set.Logger)}
		if err := tb.RegisterConnectorDiagnosisNodesCallback(e.observeNodes); err != nil {
			return nil, err
		}
		engines[cfg] = e
	}
	e.instances++
	return e, nil
}

// observeNodes reports how many nodes the engine keeps.
func (e *engine) observeNodes(_ context.Context, o metric.Int64Observer) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	o.Observe(int64(len(e.nodes)))
	return nil
}

// diagnosis is one connector instance: the pipelines' view of the shared engine.
type diagnosis struct {
	e *engine
}

var _ connector.Metrics = (*diagnosis)(nil)

func (d *diagnosis) Capabilities() consumer.Capabilities {
	return consumer.Capabilities{MutatesData: false}
}

func (d *diagnosis) Start(_ context.Context, host component.Host) error {
	e := d.e
	enginesMu.Lock()
	defer enginesMu.Unlock()
	if e.running {
		return nil
	}
	if e.cfg.Capture != nil {
		hub, err := capture.Find(host, *e.cfg.Capture)
		if err != nil {
			return err
		}
		e.capture = hub
	}
	e.running = true
	e.stop, e.done = make(chan struct{}), make(chan struct{})
	// The ticker starts here, not in the loop's goroutine, so that an interval of the clock that
	// passes after Start is always a tick.
	go e.loop(e.clock.NewTicker(e.cfg.Interval), e.stop, e.done)
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
	if last {
		e.telemetry.Shutdown()
	}
	return nil
}

func (d *diagnosis) ConsumeMetrics(_ context.Context, md pmetric.Metrics) error {
	d.e.ingest(md, d.e.clock.Now())
	return nil
}

func (e *engine) loop(t *clock.Ticker, stop, done chan struct{}) {
	defer close(done)
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
	var skewed int
	rms := md.ResourceMetrics()
	for i := range rms.Len() {
		rm := rms.At(i)
		if !nodestate.ReadsAny(rm.ScopeMetrics()) {
			continue
		}
		key := nodestate.Key(rm.Resource())
		n := e.nodes[key]
		if n == nil {
			e.makeRoom(now)
			n = newNode(key, nodestate.Limits{MaxSkew: e.cfg.MaxClockSkew})
			e.nodes[key] = n
		}
		skewed += n.Ingest(rm.Resource(), rm.ScopeMetrics(), now.UnixNano()).Skewed
	}
	if skewed > 0 {
		e.telemetry.ConnectorDiagnosisPointsRefused.Add(context.Background(), int64(skewed))
		if !e.warnedSkew {
			e.warnedSkew = true
			e.logger.Warn("diagnosis: refusing points stamped far from this collector's clock (check the sender's clock); said once, counted in otelcol_connector_diagnosis_points_refused",
				zap.Duration("max_clock_skew", e.cfg.MaxClockSkew), zap.Int("refused", skewed))
		}
	}
}

// makeRoom makes room for one more node: beyond max_nodes the one seen least recently goes.
func (e *engine) makeRoom(now time.Time) {
	for len(e.nodes) >= e.cfg.MaxNodes {
		var oldest *node
		for _, n := range e.nodes {
			if oldest == nil || n.LastSeen < oldest.LastSeen {
				oldest = n
			}
		}
		delete(e.nodes, oldest.Name)
		e.evictions.Evicted(now, oldest.Name, e.cfg.MaxNodes)
		e.telemetry.ConnectorDiagnosisNodesEvicted.Add(context.Background(), 1)
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
	e.sayRefusal(errors.Join(errs...))
	e.captureRaised(ctx)
}

// sayRefusal logs what the next consumers made of one evaluation's verdicts (err nil: taken): the
// first refusal of a run at Warn, the rest at Debug, and the recovery at Info with the count.
func (e *engine) sayRefusal(err error) {
	switch {
	case err != nil && e.refusals == 0:
		e.refusals = 1
		e.logger.Warn("diagnosis: the next consumer refused the verdicts (said again when it takes them; the rest of this run at debug)", zap.Error(err))
	case err != nil:
		e.refusals++
		e.logger.Debug("diagnosis: the next consumer refused the verdicts", zap.Error(err), zap.Int("evaluations_refused", e.refusals))
	case e.refusals > 0:
		e.logger.Info("diagnosis: the next consumer takes the verdicts again", zap.Int("evaluations_refused", e.refusals))
		e.refusals = 0
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
		if n.LastSeen <= t-e.cfg.StaleAfter.Nanoseconds() {
			delete(e.nodes, name)
			continue
		}
		names = append(names, name)
	}
	sort.Strings(names)
	// Every node's conditions first: straggler compares the nodes of a communicator
	// (stragglers.go), waits_on_peer reads its peers' conditions, stragglers' included (peers.go).
	evals := make([]evaluation, 0, len(names))
	for _, name := range names {
		n := e.nodes[name]
		n.Forget(t, e.cfg.StaleAfter)
		v := n.view(e.cfg, t)
		evals = append(evals, evaluation{n: n, v: v, cond: conditions(e.cfg.Thresholds, v)})
	}
	stragglerConditions(e.cfg.Thresholds, evals)
	peerConditions(e.cfg.enabled, evals)
	for _, ev := range evals {
		n, v := ev.n, ev.v
		ownerChanges := e.evaluateOwners(ld, n, v, ts)
		holding := e.decide(n, ev.cond, ts)
		v.coll.holding = holding
		ev := evidence(e.cfg.Thresholds, v)
		for k, x := range ev {
			e.recordEvidence(n, ts, x, k, nodestate.OwnerID{})
		}
		res := pcommon.NewResource()
		n.Resource.CopyTo(res.Attributes())
		e.mb.EmitForResource(metadata.WithResource(res))
		changes := e.logChanges(ld, n, v, ev, holding, ts) + ownerChanges
		e.telemetry.ConnectorDiagnosisEvaluations.Add(context.Background(), 1)
		if changes > 0 {
			e.telemetry.ConnectorDiagnosisVerdictChanges.Add(context.Background(), int64(changes))
		}
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
		if !e.cfg.enabled(k.verdict) {
			continue
		}
		val := int64(0)
		if held(n.streak, k, cond[k], e.cfg.Hold) {
			val = 1
			holding[k] = true
		}
		e.recordVerdict(n, ts, val, k, nodestate.OwnerID{})
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
