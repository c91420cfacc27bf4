package nodestate // import "github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"

import (
	"time"

	"go.uber.org/zap"
)

// Evictions says, at Warn, that a consumer bounded by max_nodes forgot nodes to make room for
// others: the first eviction at once, then at most once a minute with the count since the last
// message, so that 20,000 hosts against 1,024 slots are said, and said with a number, without a
// line per node.
type Evictions struct {
	logger *zap.Logger
	// Total is every eviction since start.
	Total int64
	since int64 // evictions not said yet
	said  time.Time
}

// NewEvictions reports to logger.
func NewEvictions(logger *zap.Logger) *Evictions { return &Evictions{logger: logger} }

// evictionEvery is how often evictions are said at most.
const evictionEvery = time.Minute

// Evicted counts the eviction of node at now, and says it when due.
func (e *Evictions) Evicted(now time.Time, node string, maxNodes int) {
	e.Total++
	e.since++
	if !e.said.IsZero() && now.Sub(e.said) < evictionEvery {
		return
	}
	e.logger.Warn("more nodes than max_nodes: the least recently seen are forgotten; raise max_nodes to keep them",
		zap.Int("max_nodes", maxNodes), zap.Int64("evicted", e.since), zap.Int64("evicted_total", e.Total),
		zap.String("last_evicted", node))
	e.since = 0
	e.said = now
}
