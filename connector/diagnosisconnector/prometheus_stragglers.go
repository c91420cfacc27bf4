package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"

import (
	"fmt"

	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// stragglerRules sets straggler's expression (stragglers.go): per collective type reported by at
// least two nodes, the node whose bus bandwidth is the highest and at least the ratio times the
// second highest (min of topk 2), which must be above 0. Tied nodes are none's straggler: the
// second highest is their own. It reads recCollBusBw (collectiveRules).
func stragglerRules(cfg *Config, exprs map[string]string) {
	exprs[verdict.Straggler] = fmt.Sprintf("max by (%[1]s, device) (\n"+
		"  (%[2]s == on (device) group_left () max by (device) (%[2]s))\n"+
		"  >= on (device) group_left () (%[3]s * (min by (device) (topk by (device) (2, %[2]s)) > 0))\n"+
		"  and on (device) (count by (device) (%[2]s) >= 2))",
		nodeLabel, recCollBusBw, promFloat(cfg.Thresholds.StragglerMinBusBandwidthRatio))
}
