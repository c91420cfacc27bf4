package dashboard

import (
	"regexp"
	"strings"
)

// Query is one PromQL expression of the dashboard, as the JSON holds it (with Grafana's
// variables), and the panel it belongs to.
type Query struct {
	Panel   string // the panel's title
	RefID   string // A, B, ... within the panel
	Expr    string // PromQL with $node and $__rate_interval
	Legend  string // Grafana legend format, empty for the automatic one
	Instant bool   // an instant query (tables, bar gauges); else a range query
	// Needs is empty when every node whose receivers emit the metric answers the query, idle or
	// not. Otherwise it names the hardware or the event without which the query is rightly
	// empty (an XID, NVLink GPUs, an AMD memory controller), so that a test replaying recorded
	// cases knows which queries must return data in which case.
	Needs string
}

// Queries returns every PromQL expression of the dashboard, in panel order, so that a test can run
// each one against a real Prometheus (Resolve fills in Grafana's variables).
func Queries() ([]Query, error) {
	_, qs, err := build()
	return qs, err
}

// Resolve returns the expression as Grafana would send it to Prometheus for the given node
// (empty: all nodes), every job and pod ($job, $pod: All) and rate interval (a PromQL duration such as "1m"). Grafana computes
// $__rate_interval as max(4 x scrape interval, step + scrape interval); a test that replays at
// a 1 s collection interval can pass "10s".
func (q Query) Resolve(node, rateInterval string) string {
	n := AllNodes
	if node != "" {
		// Grafana escapes a selected value for use inside =~, and the backslashes again for the
		// PromQL string literal ("node\\.a" is the regex node\.a).
		n = strings.ReplaceAll(regexp.QuoteMeta(node), `\`, `\\`)
	}
	return strings.NewReplacer(
		"$__rate_interval", rateInterval,
		"$node", n,
		"$job", AllOwners,
		"$pod", AllOwners,
	).Replace(q.Expr)
}
