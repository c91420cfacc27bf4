package dashboard

// The dashboard's queries against the receivers' metadata.yaml: every metric a query names must
// be one the receivers emit, under the name Prometheus gives it, with labels it has and values
// its enums allow; counters are only ever read through rate() or increase(); and every metric the
// receivers enable by default is on the dashboard somewhere.

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// metadataFile is the part of mdatagen's metadata.yaml the test needs.
type metadataFile struct {
	Type       string `yaml:"type"`
	Attributes map[string]struct {
		NameOverride string   `yaml:"name_override"`
		Enum         []string `yaml:"enum"`
	} `yaml:"attributes"`
	Metrics map[string]struct {
		Enabled bool   `yaml:"enabled"`
		Unit    string `yaml:"unit"`
		Sum     *struct {
			Monotonic bool `yaml:"monotonic"`
		} `yaml:"sum"`
		Gauge      *struct{} `yaml:"gauge"`
		Attributes []string  `yaml:"attributes"`
	} `yaml:"metrics"`
}

// promMetric is a receiver metric as Prometheus stores it.
type promMetric struct {
	otelName  string
	receivers []string
	counter   bool                       // a monotonic sum: _total, read through rate()
	enabled   bool                       // enabled by default in some receiver
	labels    map[string]map[string]bool // label -> allowed values (nil: any)
}

// resourceLabels are on every series whatever the metric: host.name (the node) and the job and
// instance Prometheus derives from service.name and service.instance.id.
var resourceLabels = []string{"host_name", "job", "instance"}

// loadCatalog reads every receiver's (and connector's: the diagnosis verdicts) metadata.yaml.
func loadCatalog(t *testing.T) map[string]*promMetric {
	t.Helper()
	files, err := filepath.Glob("../../receiver/*/metadata.yaml")
	require.NoError(t, err)
	connectors, err := filepath.Glob("../../connector/*/metadata.yaml")
	require.NoError(t, err)
	files = append(files, connectors...)
	require.NotEmpty(t, files, "no receiver metadata.yaml found")
	cat := map[string]*promMetric{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		var md metadataFile
		require.NoError(t, yaml.Unmarshal(b, &md), f)
		for name, m := range md.Metrics {
			kind := "gauge"
			if m.Sum != nil {
				kind = "sum"
				if m.Sum.Monotonic {
					kind = "counter"
				}
			}
			pn := promMetricName(name, m.Unit, kind)
			pm := cat[pn]
			if pm == nil {
				pm = &promMetric{otelName: name, counter: kind == "counter", labels: map[string]map[string]bool{}}
				cat[pn] = pm
			}
			require.Equal(t, name, pm.otelName, "%s and %s both become %s in Prometheus", name, pm.otelName, pn)
			pm.receivers = append(pm.receivers, md.Type)
			pm.enabled = pm.enabled || m.Enabled
			for _, a := range m.Attributes {
				attr, ok := md.Attributes[a]
				require.True(t, ok, "%s: metric %s names undefined attribute %s", f, name, a)
				key := a
				if attr.NameOverride != "" {
					key = attr.NameOverride
				}
				l := promLabelName(key)
				if attr.Enum == nil {
					pm.labels[l] = nil
					continue
				}
				if _, seen := pm.labels[l]; !seen {
					pm.labels[l] = map[string]bool{}
				}
				if pm.labels[l] != nil {
					for _, v := range attr.Enum {
						pm.labels[l][v] = true
					}
				}
			}
		}
	}
	return cat
}

// promUnits and promPerUnits are the OpenTelemetry-to-Prometheus unit words
// (github.com/prometheus/otlptranslator, used by the prometheus and prometheusremotewrite
// exporters and by Prometheus' OTLP receiver).
var (
	promUnits = map[string]string{
		"d": "days", "h": "hours", "min": "minutes", "s": "seconds", "ms": "milliseconds",
		"us": "microseconds", "ns": "nanoseconds",
		"By": "bytes", "KiBy": "kibibytes", "MiBy": "mebibytes", "GiBy": "gibibytes", "TiBy": "tibibytes",
		"KBy": "kilobytes", "MBy": "megabytes", "GBy": "gigabytes", "TBy": "terabytes",
		"m": "meters", "V": "volts", "A": "amperes", "J": "joules", "W": "watts", "g": "grams",
		"Cel": "celsius", "Hz": "hertz", "1": "", "%": "percent",
	}
	promPerUnits = map[string]string{"s": "second", "m": "minute", "h": "hour", "d": "day", "w": "week", "mo": "month", "y": "year"}
)

// promMetricName is otlptranslator's normalizeName (underscore escaping with suffixes): the name
// split into words, the unit's word unless already there (annotations in braces are dropped,
// By/s gives bytes_per_second, {GT}/s gives per_second), _total for monotonic sums, _ratio for
// gauges of unit 1.
func promMetricName(name, unit, kind string) string {
	words := strings.FieldsFunc(name, func(r rune) bool { return !isMetricChar(r) })
	mainUnit, perUnit, _ := strings.Cut(unit, "/")
	mainWord, perWord := "", ""
	if u := strings.TrimSpace(mainUnit); u != "" && !strings.ContainsAny(u, "{}") {
		mainWord = u
		if w, ok := promUnits[u]; ok {
			mainWord = w
		}
	}
	if u := strings.TrimSpace(perUnit); u != "" && !strings.ContainsAny(u, "{}") {
		perWord = u
		if w, ok := promPerUnits[u]; ok {
			perWord = w
		}
		perWord = "per_" + perWord
	}
	clean := func(s string) string {
		return strings.TrimPrefix(collapseUnderscores(strings.Map(func(r rune) rune {
			if isMetricChar(r) {
				return r
			}
			return '_'
		}, s)), "_")
	}
	mainWord, perWord = clean(mainWord), clean(perWord)
	if slices.Contains(words, mainWord) {
		mainWord = ""
	}
	if perWord == "per_" {
		perWord = ""
	} else {
		perWord = strings.TrimSuffix(perWord, "_")
		if slices.Contains(words, perWord) {
			perWord = ""
		}
	}
	if perWord != "" {
		mainWord = strings.TrimSuffix(mainWord, "_")
	}
	if mainWord != "" {
		words = append(words, mainWord)
	}
	if perWord != "" {
		words = append(words, perWord)
	}
	if kind == "counter" {
		words = append(slices.DeleteFunc(words, func(w string) bool { return w == "total" }), "total")
	}
	if unit == "1" && kind == "gauge" {
		words = append(slices.DeleteFunc(words, func(w string) bool { return w == "ratio" }), "ratio")
	}
	return strings.Join(words, "_")
}

func isMetricChar(r rune) bool {
	return r == ':' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
}

func collapseUnderscores(s string) string {
	for strings.Contains(s, "__") {
		s = strings.ReplaceAll(s, "__", "_")
	}
	return s
}

// promLabelName escapes an attribute key as Prometheus does: pci.bus_id -> pci_bus_id.
func promLabelName(k string) string {
	l := strings.Map(func(r rune) rune {
		if r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return '_'
	}, k)
	if l != "" && unicode.IsDigit(rune(l[0])) {
		l = "key_" + l
	}
	return l
}

// TestPromMetricName pins the translation to names the built collector serves (see the brief's
// and distributions/otelcol-iclens/collector_test.go's expositions).
func TestPromMetricName(t *testing.T) {
	for _, c := range []struct{ name, unit, kind, want string }{
		{"interconnect.io", "By", "counter", "interconnect_io_bytes_total"},
		{"rnic.port.rate", "By/s", "gauge", "rnic_port_rate_bytes_per_second"},
		{"rnic.port.state", "{state}", "gauge", "rnic_port_state"},
		{"rnic.port.info", "{info}", "gauge", "rnic_port_info"},
		{"rnic.counter.saturated", "{counter}", "gauge", "rnic_counter_saturated"},
		{"rnic.port.xmit_wait", "{tick}", "counter", "rnic_port_xmit_wait_total"},
		{"rnic.topology.link.speed", "{GT}/s", "gauge", "rnic_topology_link_speed_per_second"},
		{"rnic.pfc.pause_duration", "us", "counter", "rnic_pfc_pause_duration_microseconds_total"},
		{"gpu.dram.active", "1", "gauge", "gpu_dram_active_ratio"},
		{"cpuuncore.counter.running_ratio", "1", "gauge", "cpuuncore_counter_running_ratio"},
		{"cpuuncore.event.bytes_per_count", "By", "gauge", "cpuuncore_event_bytes_per_count"},
	} {
		assert.Equal(t, c.want, promMetricName(c.name, c.unit, c.kind), "%s [%s]", c.name, c.unit)
	}
	assert.Equal(t, "pci_bus_id", promLabelName("pci.bus_id"))
}

var variableRE = regexp.MustCompile(`\$\{?(\w+)`)

// TestQueriesParse parses every query as Grafana sends it, for all nodes and for one node whose
// name needs escaping.
func TestQueriesParse(t *testing.T) {
	qs, err := Queries()
	require.NoError(t, err)
	require.NotEmpty(t, qs)
	for _, q := range qs {
		for _, m := range variableRE.FindAllStringSubmatch(q.Expr, -1) {
			assert.Contains(t, []string{"node", "job", "pod", "__rate_interval"}, m[1], "%s: unknown variable in %s", q.Panel, q.Expr)
		}
		for _, node := range []string{"", "gpu-node-1.cluster.local"} {
			expr := q.Resolve(node, "1m")
			_, typ, err := parsePromQL(expr)
			if assert.NoError(t, err, "%s/%s: %s", q.Panel, q.RefID, expr) {
				assert.Equal(t, vInstant, typ, "%s/%s: a panel query must give an instant vector: %s", q.Panel, q.RefID, expr)
			}
		}
	}
}

// TestParserRejects makes sure the test parser is not a rubber stamp.
func TestParserRejects(t *testing.T) {
	for _, bad := range []string{
		`sum(rate(x_total[1m])`,                // unbalanced
		`rate(x_total{a="b"}[1m]))`,            // unbalanced
		`rate(x_total{a="b"[1m])`,              // unclosed braces
		`rate(x_total)`,                        // rate of an instant vector
		`sum by (a) (x_total[1m])`,             // aggregation of a range vector
		`x{a=~"node\.1"}`,                      // unknown escape in a string
		`x{a=~"("}`,                            // bad regex
		`x{a~"b"}`,                             // bad matcher operator
		`rate(x_total[1 m])`,                   // bad duration
		`frobnicate(x)`,                        // unknown function
		`clamp_min(x)`,                         // missing argument
		`sum by (a (x)`,                        // bad label list
		`x / `,                                 // dangling operator
		`{}`,                                   // empty selector
		`x{a="b"} y`,                           // trailing garbage
		`rate(x_total[1m]) / on (a b) y_total`, // label list without commas
	} {
		_, _, err := parsePromQL(bad)
		assert.Error(t, err, "accepted %s", bad)
	}
	_, _, err := parsePromQL(`max by (h) (sum by (h, d) (rate(a_total{c="r", d=~"x|y"}[1m])) / on (h, d) max by (h, d) (b))`)
	assert.NoError(t, err)
}

// TestQueriesUseReceiverMetrics checks every selector of every query against metadata.yaml.
func TestQueriesUseReceiverMetrics(t *testing.T) {
	cat := loadCatalog(t)
	qs, err := Queries()
	require.NoError(t, err)
	used := map[string]bool{}
	for _, q := range qs {
		where := q.Panel + "/" + q.RefID
		pq, _, err := parsePromQL(q.Resolve("", "1m"))
		require.NoError(t, err, where)
		queryLabels := map[string]bool{}
		for _, l := range resourceLabels {
			queryLabels[l] = true
		}
		nodeFiltered := 0
		for _, s := range pq.selectors {
			pm, ok := cat[s.metric]
			if !assert.True(t, ok, "%s: %q is not a metric of any receiver's metadata.yaml (after Prometheus translation): %s", where, s.metric, q.Expr) {
				continue
			}
			used[s.metric] = true
			assert.True(t, pm.enabled, "%s: %s is disabled by default; the dashboard must not depend on it", where, s.metric)
			if pm.counter {
				assert.True(t, s.counter && s.ranged, "%s: %s is a cumulative counter; read it through rate() or increase(): %s", where, s.metric, q.Expr)
			} else {
				assert.False(t, s.counter, "%s: %s is not a counter; rate()/increase() of it is meaningless: %s", where, s.metric, q.Expr)
			}
			for l := range pm.labels {
				queryLabels[l] = true
			}
			for _, m := range s.matchers {
				if m.label == "host_name" {
					nodeFiltered++
				}
				if slices.Contains(resourceLabels, m.label) {
					continue
				}
				allowed, ok := pm.labels[m.label]
				if !assert.True(t, ok, "%s: %s has no label %q (it has %v): %s", where, s.metric, m.label, sortedKeys(pm.labels), q.Expr) {
					continue
				}
				if allowed == nil || m.op == "!=" || m.op == "!~" {
					continue
				}
				values := []string{m.value}
				if m.op == "=~" {
					if !regexp.MustCompile(`^[a-z0-9_]+(\|[a-z0-9_]+)*$`).MatchString(m.value) {
						continue // a real regex: nothing to enumerate
					}
					values = strings.Split(m.value, "|")
				}
				for _, v := range values {
					assert.True(t, allowed[v], "%s: %s{%s} is never %q (enum: %v)", where, s.metric, m.label, v, sortedKeys(allowed))
				}
			}
		}
		for _, l := range pq.grouping {
			assert.True(t, queryLabels[l], "%s: grouping label %q is on none of the query's metrics: %s", where, l, q.Expr)
		}
		// Either every selector is limited to $node or none is (the cluster overview): a
		// forgotten filter on one side of a division would mix nodes.
		assert.True(t, nodeFiltered == 0 || nodeFiltered == len(pq.selectors),
			"%s: %d of %d selectors filter on host_name: %s", where, nodeFiltered, len(pq.selectors), q.Expr)
	}

	// Every metric the receivers emit by default has a place on the dashboard.
	for name, pm := range cat {
		if pm.enabled {
			assert.True(t, used[name], "%s (%s, %v) is enabled by default but on no panel", name, pm.otelName, pm.receivers)
		}
	}
}

// TestPaperViewNamesEveryComponent checks that the node view has a name and colour for every
// component and direction the receivers can emit in interconnect.io.
func TestPaperViewNamesEveryComponent(t *testing.T) {
	cat := loadCatalog(t)
	io := cat["interconnect_io_bytes_total"]
	require.NotNil(t, io)
	named := map[string]bool{}
	for _, s := range paperSeries {
		named[s.legend] = true
	}
	for c := range io.labels["component"] {
		// Memory is read and written, links are transmitted and received (metadata/vocabulary.yaml).
		dirs := []string{"transmit", "receive"}
		if strings.HasSuffix(c, "_memory") {
			dirs = []string{"read", "write"}
		}
		for _, d := range dirs {
			assert.True(t, named[c+" "+d], "the node view has no name for %s %s", c, d)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
