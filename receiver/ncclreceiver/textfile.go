package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The Inspector's Prometheus textfile mode (NCCL_INSPECTOR_PROM_DUMP=1) writes one file per GPU,
// <dump dir>/nccl_inspector_metrics_<uuid>.prom (inspector_prom.cc inspectorPromGetFilename; the
// UUID as inspector.cc formats cuDeviceGetUuid: hex without the "GPU-" prefix), rewritten every
// dump interval (30 s at least) with the interval's aggregate per bucket
// (inspectorPromWriteCollBucket: "nccl_bus_bandwidth_gbs{...} %.6g").
const textfilePattern = "nccl_inspector_metrics_*.prom"

// The textfile metrics and which value of a bucket each is.
var textfileMetrics = map[string]bool{ // name -> is bus bandwidth (else duration)
	"nccl_bus_bandwidth_gbs":                 true,
	"nccl_collective_exec_time_microseconds": false,
	"nccl_p2p_bus_bandwidth_gbs":             true,
	"nccl_p2p_exec_time_microseconds":        false,
}

// textfileBucket is one bucket of a textfile: its labels (inspectorPromGetLabelsColl / ...P2p)
// less version, slurm_job_id and gpu (the process's CUDA index, not the GPU).
type textfileBucket struct {
	host, commName, op, size, algoProto, busID string
	nranks                                     int64
}

type textfileValues struct {
	busBw, execUs       float64
	hasBusBw, hasExecUs bool
}

// readTextfile reads one textfile. A file the Inspector is rewriting ("w" truncates it first)
// can be short or cut in a line: such a file is an error for this scrape and read again next.
func readTextfile(path string, busIDOfUUID func(string) string) (map[textfileBucket]textfileValues, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, fmt.Errorf("%s: cut in a line (being rewritten)", path)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	uuid := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "nccl_inspector_metrics_"), ".prom")
	busID := busIDOfUUID(uuid)
	out := map[textfileBucket]textfileValues{}
	names := make([]string, 0, len(families))
	for n := range families {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		isBw, known := textfileMetrics[name]
		if !known {
			continue
		}
		for _, m := range families[name].GetMetric() {
			v, ok := sampleValue(m)
			if !ok {
				continue
			}
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			op := l["collective"]
			if op == "" {
				op = l["p2p_operation"]
			}
			n, _ := strconv.ParseInt(l["nranks"], 10, 64)
			k := textfileBucket{host: l["node"], commName: l["comm_name"], op: op, size: l["message_size"],
				algoProto: l["algo_proto"], busID: busID, nranks: n}
			vals := out[k]
			if isBw {
				vals.busBw, vals.hasBusBw = v, true
			} else {
				vals.execUs, vals.hasExecUs = v, true
			}
			out[k] = vals
		}
	}
	return out, nil
}

func sampleValue(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	}
	return 0, false
}

// readTextfiles reads every textfile of dir modified within staleAfter of now (a file left by a
// job that ended stops counting), keyed by file; a file that cannot be read is in errs.
func readTextfiles(dir string, staleAfter time.Duration, now time.Time, busIDOfUUID func(string) string) (map[textfileBucket]textfileValues, map[string]error) {
	paths, _ := filepath.Glob(filepath.Join(dir, textfilePattern))
	out := map[textfileBucket]textfileValues{}
	errs := map[string]error{}
	for _, p := range paths {
		if fi, err := os.Stat(p); err != nil || (staleAfter > 0 && now.Sub(fi.ModTime()) > staleAfter) {
			continue
		}
		buckets, err := readTextfile(p, busIDOfUUID)
		if err != nil {
			errs[p] = err
			continue
		}
		for k, v := range buckets {
			out[k] = v
		}
	}
	return out, errs
}
