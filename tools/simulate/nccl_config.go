package simulate

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/otelcol-iclens/otelcol-iclens/internal/scenario"
)

// NCCLSources says which cases' NCCL job the generated collector configuration reads: the
// Inspector dumps WriteNCCL wrote for them, and a RAS service per node where one answers.
type NCCLSources struct {
	// Cases are the names of the cases whose dumps one nccl receiver per case reads, in a pipeline
	// of its own: each record names its node (hostname), which the replaying nodes' resource
	// processors would overwrite.
	Cases map[string]bool
	// RAS is the RAS endpoint of a node (by host.name), read by a nccl receiver in that node's
	// pipeline: the RAS service reports on the node it runs on.
	RAS map[string]string
	// StaleAfter is the receivers' inspector.stale_after: the dumps are written before the
	// collector starts and read at once, so their series must outlive the replay.
	StaleAfter time.Duration
}

// CollectorConfigWithNCCL is CollectorConfigFor with the nccl receivers of src.
func CollectorConfigWithNCCL(dir string, interval time.Duration, exporter string, cases []scenario.Case, src NCCLSources) (string, error) {
	return collectorConfig(dir, interval, exporter, cases, &src)
}

// rasReceiver adds the RAS-only nccl receiver of node id, if it has a RAS service.
func (s *NCCLSources) rasReceiver(receivers *strings.Builder, names []string, id string, interval time.Duration) []string {
	if s == nil || s.RAS[id] == "" {
		return names
	}
	name := "nccl/ras-" + id
	fmt.Fprintf(receivers, "  %s:\n    collection_interval: %s\n    initial_delay: 0s\n    root_path: /\n    inspector: {dump_dir: \"\"}\n    ras: {endpoint: %q, timeout: %s}\n",
		name, interval, s.RAS[id], interval*9/10)
	return append(names, name)
}

// inspectorReceiver adds the nccl receiver of case c's dumps and its pipeline.
func (s *NCCLSources) inspectorReceiver(receivers, pipelines *strings.Builder, abs string, c scenario.Case, interval time.Duration, exporters string) {
	if s == nil || !s.Cases[c.Name] {
		return
	}
	stale := s.StaleAfter
	if stale <= 0 {
		stale = 24 * time.Hour
	}
	name := "nccl/" + c.Name
	fmt.Fprintf(receivers, "  %s:\n    collection_interval: %s\n    initial_delay: 0s\n    root_path: /\n    inspector: {dump_dir: %q, poll_interval: %s, stale_after: %s}\n    ras: {endpoint: \"\"}\n",
		name, interval, filepath.Join(abs, c.Name, "nccl"), interval/4, stale)
	fmt.Fprintf(pipelines, "    metrics/nccl-%s:\n      receivers: [%s]\n      exporters: [%s, diagnosis]\n", c.Name, name, exporters)
}

// SteadyNCCLCases are the cases of scenario.NCCLCases of one phase: those a replay can show from
// dumps written before the collector starts (a transition's records would all be read at once).
func SteadyNCCLCases() []scenario.Case {
	var out []scenario.Case
	for _, c := range scenario.NCCLCases() {
		if len(c.Phases) == 1 {
			out = append(out, c)
		}
	}
	return out
}
