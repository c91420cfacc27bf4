package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver"

	"github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver/internal/metadata"
)

// rankStateEvent is the event name of a rank's state change (LogRecord.EventName).
const rankStateEvent = "nccl.rank.state_change"

// rasLogsScraper is the receiver in a logs pipeline: each collection interval it asks the RAS
// service for its status, as the metrics scraper does, and emits one log record per rank whose
// state changed since the previous answer (a rank that went missing, unresponsive or dead, aborted,
// or came back). In both a metrics and a logs pipeline the receiver asks RAS once for each: the
// two are separate receivers, as the collector builds them, and a STATUS is one local TCP request.
type rasLogsScraper struct {
	cfg    *Config
	lb     *metadata.LogsBuilder
	poller rasPoller
	states rankStates
	now    func() time.Time
}

func newRASLogsScraper(cfg *Config, set receiver.Settings) *rasLogsScraper {
	return &rasLogsScraper{cfg: cfg, lb: metadata.NewLogsBuilder(set), poller: rasPoller{cfg: cfg.RAS, logger: set.Logger}, now: time.Now}
}

// scrape returns the state changes since the previous STATUS; none while RAS is off (an empty
// endpoint) or not answering (said once by the poller).
func (s *rasLogsScraper) scrape(ctx context.Context) (plog.Logs, error) {
	if s.cfg.RAS.Endpoint == "" {
		return plog.NewLogs(), nil
	}
	st := s.poller.poll(ctx)
	if st == nil {
		return plog.NewLogs(), nil
	}
	ts := pcommon.NewTimestampFromTime(s.now())
	for _, c := range s.states.observe(summarize(*st)) {
		lr := plog.NewLogRecord()
		lr.SetTimestamp(ts)
		lr.SetObservedTimestamp(ts)
		lr.SetEventName(rankStateEvent)
		if c.healthy() {
			lr.SetSeverityNumber(plog.SeverityNumberInfo)
			lr.SetSeverityText("INFO")
		} else {
			lr.SetSeverityNumber(plog.SeverityNumberWarn)
			lr.SetSeverityText("WARN")
		}
		lr.Body().SetStr(fmt.Sprintf("NCCL rank %d of communicator %s: %s -> %s (%s, pid %d)", c.id.rank, c.id.comm, c.from, c.to, c.host, c.pid))
		a := lr.Attributes()
		a.PutStr("nccl.comm.id", c.id.comm)
		a.PutInt("nccl.rank", c.id.rank)
		a.PutStr("nccl.rank.state", c.to)
		a.PutStr("nccl.rank.previous_state", c.from)
		a.PutStr("nccl.rank.host", c.host)
		a.PutInt("process.pid", c.pid)
		s.lb.AppendLogRecord(lr)
	}
	return s.lb.Emit(), nil
}
