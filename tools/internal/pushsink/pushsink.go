// Package pushsink is a backend for the collector's push paths in benchmarks: it takes
// Prometheus remote write 1.0 or OTLP/HTTP metrics and counts the scrapes delivered, by the
// distinct timestamps of one marker series every scrape carries. Its CPU is the backend's, apart
// from the measured collector's.
package pushsink // import "github.com/otelcol-iclens/otelcol-iclens/tools/internal/pushsink"

import (
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/golang/snappy"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"google.golang.org/protobuf/encoding/protowire"
)

// The push paths a sink takes.
const (
	RemoteWrite = "remote_write"
	OTLP        = "otlp_http"
)

// Sink is a backend for a push path: Prometheus remote write 1.0 (POST /api/v1/write, a
// snappy-compressed prometheus.WriteRequest) or OTLP/HTTP (POST /v1/metrics). It counts the
// scrapes delivered: the distinct timestamps of one series every scrape carries (the marker
// port's transmitted bytes).
type Sink struct {
	kind string
	// URL is the endpoint the exporter sends to.
	URL string
	srv *http.Server

	mu    sync.Mutex
	stamp map[int64]bool
	bad   error
}

// Marker series: port 1 of mlx5_0, transmitted RDMA bytes, in each wire format.
const (
	markerDevice = "mlx5_0/1"
	markerName   = "interconnect_io_bytes_total" // remote write (the exporter's Prometheus name)
)

// New starts a sink of kind on a loopback port of its own.
func New(kind string) (*Sink, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Sink{kind: kind, stamp: map[int64]bool{}}
	mux := http.NewServeMux()
	switch kind {
	case RemoteWrite:
		s.URL = "http://" + l.Addr().String() + "/api/v1/write"
		mux.HandleFunc("POST /api/v1/write", s.remoteWrite)
	case OTLP:
		s.URL = "http://" + l.Addr().String()
		mux.HandleFunc("POST /v1/metrics", s.otlp)
	default:
		l.Close()
		return nil, fmt.Errorf("unknown push path %q", kind)
	}
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// Close stops the sink.
func (s *Sink) Close() { _ = s.srv.Close() }

// Delivered returns how many scrapes arrived so far, and the first malformed request's error.
func (s *Sink) Delivered() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stamp), s.bad
}

func (s *Sink) fail(w http.ResponseWriter, err error) {
	s.mu.Lock()
	s.bad = err
	s.mu.Unlock()
	http.Error(w, err.Error(), http.StatusBadRequest)
}

func (s *Sink) remoteWrite(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		s.fail(w, err)
		return
	}
	raw, err := snappy.Decode(nil, b)
	if err != nil {
		s.fail(w, fmt.Errorf("remote write body: %w", err))
		return
	}
	stamps, err := markerStamps(raw)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.mu.Lock()
	for _, t := range stamps {
		s.stamp[t] = true
	}
	s.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// markerStamps reads the marker series' sample timestamps out of a remote-write 1.0 WriteRequest
// (prometheus prompb/remote.proto, types.proto: WriteRequest.timeseries = 1; TimeSeries.labels =
// 1, samples = 2; Label.name = 1, value = 2; Sample.value = 1, timestamp = 2), field by field.
func markerStamps(b []byte) ([]int64, error) {
	var out []int64
	err := eachField(b, func(num protowire.Number, v []byte) error {
		if num != 1 { // timeseries
			return nil
		}
		var name, device, component, direction string
		var stamps []int64
		err := eachField(v, func(num protowire.Number, v []byte) error {
			switch num {
			case 1: // label
				var k, val string
				if err := eachField(v, func(num protowire.Number, v []byte) error {
					switch num {
					case 1:
						k = string(v)
					case 2:
						val = string(v)
					}
					return nil
				}); err != nil {
					return err
				}
				switch k {
				case "__name__":
					name = val
				case "device":
					device = val
				case "component":
					component = val
				case "direction":
					direction = val
				}
			case 2: // sample
				return eachVarint(v, 2, func(t uint64) { stamps = append(stamps, int64(t)) })
			}
			return nil
		})
		if err != nil {
			return err
		}
		if name == markerName && device == markerDevice && component == "rnic" && direction == "transmit" {
			out = append(out, stamps...)
		}
		return nil
	})
	return out, err
}

// eachField calls f with the number and bytes of every length-delimited field of a message.
func eachField(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if err := f(num, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// eachVarint calls f with the varint field want of a message.
func eachVarint(b []byte, want protowire.Number, f func(uint64)) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if num == want && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return protowire.ParseError(n)
			}
			f(v)
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
	}
	return nil
}

func (s *Sink) otlp(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			s.fail(w, err)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		s.fail(w, err)
		return
	}
	req := pmetricotlp.NewExportRequest()
	if err := req.UnmarshalProto(b); err != nil {
		s.fail(w, fmt.Errorf("OTLP body: %w", err))
		return
	}
	var stamps []int64
	for _, rm := range req.Metrics().ResourceMetrics().All() {
		for _, sm := range rm.ScopeMetrics().All() {
			for _, m := range sm.Metrics().All() {
				if m.Name() != "interconnect.io" || m.Type() != pmetric.MetricTypeSum {
					continue
				}
				for _, dp := range m.Sum().DataPoints().All() {
					d, _ := dp.Attributes().Get("device")
					c, _ := dp.Attributes().Get("component")
					dir, _ := dp.Attributes().Get("direction")
					if d.Str() == markerDevice && c.Str() == "rnic" && dir.Str() == "transmit" {
						stamps = append(stamps, int64(dp.Timestamp()))
					}
				}
			}
		}
	}
	s.mu.Lock()
	for _, t := range stamps {
		s.stamp[t] = true
	}
	s.mu.Unlock()
	resp, _ := pmetricotlp.NewExportResponse().MarshalProto()
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(resp)
}
