package otelcoliclens_test

import (
	"compress/gzip"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
)

// otlpSink is an OTLP/HTTP metrics backend (POST /v1/metrics, protobuf, as the OTLP
// specification's HTTP transport defines it) that keeps the collection timestamp of every
// interconnect.io point it is sent, per series, duplicates included. stop closes its listener
// (the collector's connections are refused), start listens on the same address again.
type otlpSink struct {
	addr string
	srv  *http.Server

	mu     sync.Mutex
	points map[string][]float64
	probes map[int64]bool // the values of the probe gauge's points (probeMetric), by value
}

// probeMetric is the gauge a test pushes through the collector's OTLP receiver, each point a
// distinct integer value.
const probeMetric = "iclens.test.probe"

func newOTLPSink(t *testing.T) *otlpSink {
	s := &otlpSink{addr: freeAddr(t), points: map[string][]float64{}, probes: map[int64]bool{}}
	s.start(t) // on an address of its own (freeAddr), so that stop and start keep it
	t.Cleanup(func() {
		if s.srv != nil {
			_ = s.srv.Close()
		}
	})
	return s
}

func (s *otlpSink) start(t *testing.T) {
	t.Helper()
	l, err := net.Listen("tcp", s.addr)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/metrics", s.receive)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.srv = srv
	go func() { _ = srv.Serve(l) }() // srv, not s.srv: stop may clear it before this runs
}

func (s *otlpSink) stop(t *testing.T) {
	t.Helper()
	require.NoError(t, s.srv.Close())
	s.srv = nil
}

func (s *otlpSink) receive(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.record(req.Metrics())
	resp, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}

func (s *otlpSink) record(md pmetric.Metrics) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rm := range md.ResourceMetrics().All() {
		host, _ := rm.Resource().Attributes().Get("host.name")
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() == probeMetric && m.Type() == pmetric.MetricTypeGauge {
					for _, dp := range m.Gauge().DataPoints().All() {
						s.probes[dp.IntValue()] = true
					}
					continue
				}
				if m.Name() != "interconnect.io" || m.Type() != pmetric.MetricTypeSum {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					key := host.Str() + " " + attrKey(dp.Attributes())
					s.points[key] = append(s.points[key], float64(dp.Timestamp())/1e9)
				}
			}
		}
	}
}

func attrKey(attrs pcommon.Map) string {
	var kv []string
	for k, v := range attrs.All() {
		kv = append(kv, k+"="+v.AsString())
	}
	sort.Strings(kv)
	return strings.Join(kv, ",")
}

func (s *otlpSink) newest(*testing.T) []float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := float64(time.Now().UnixMilli()) / 1000
	var out []float64
	for _, ts := range s.points {
		newest := 0.0
		for _, x := range ts {
			newest = max(newest, x)
		}
		out = append(out, now-newest)
	}
	return out
}

func (s *otlpSink) collected(_ *testing.T, from, to time.Time) map[string][]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	lo, hi := float64(from.UnixMilli())/1000, float64(to.UnixMilli())/1000
	out := map[string][]float64{}
	for k, ts := range s.points {
		for _, x := range ts {
			if x >= lo && x <= hi {
				out[k] = append(out[k], x)
			}
		}
		sort.Float64s(out[k])
	}
	return out
}

// probesReceived returns how many of values the sink holds.
func (s *otlpSink) probesReceived(values []int64) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, v := range values {
		if s.probes[v] {
			n++
		}
	}
	return n
}
