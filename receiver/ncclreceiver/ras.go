package ncclreceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/ncclreceiver"

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"go.uber.org/zap"
)

// rasClientProtocol is the RAS client protocol this receiver speaks (src/ras/ras_internal.h
// NCCL_RAS_CLIENT_PROTOCOL 2). The server ignores the client's number and sends its own
// (client_support.cc rasClientEventLoop, "client protocol "), so a mismatch is only noted.
const rasClientProtocol = 2

// rasStatus is the JSON STATUS document of NCCL 2.28.7+ (src/ras/client_support.cc
// rasDumpCommsToJSON: jsonWriteHeader, jsonStartCommunicator, jsonWriteRankData,
// jsonWriteMissingRank, jsonWriteFooter).
type rasStatus struct {
	NCCLVersion   string    `json:"nccl_version"`
	Communicators []rasComm `json:"communicators"`
}

type rasComm struct {
	Hash         string           `json:"hash"` // "0x%lx", the Inspector's header.id
	Size         int64            `json:"size"`
	Ranks        []rasRank        `json:"ranks"`
	MissingRanks []rasMissingRank `json:"missing_ranks"`
}

type rasRank struct {
	Rank   int64  `json:"rank"`
	Host   string `json:"host"`
	PID    int64  `json:"pid"`
	Status struct {
		InitState      int  `json:"init_state"`  // ncclResult_t of the communicator's init
		AsyncError     int  `json:"async_error"` // ncclResult_t from ncclCommGetAsyncError
		FinalizeCalled bool `json:"finalize_called"`
		DestroyFlag    bool `json:"destroy_flag"`
		AbortFlag      bool `json:"abort_flag"`
	} `json:"status"`
	CollectiveCounts map[string]uint64 `json:"collective_counts"` // ncclFuncToString -> ops launched
}

type rasMissingRank struct {
	Rank   int64  `json:"rank"`
	Host   string `json:"host"`
	PID    int64  `json:"pid"`
	Status struct {
		Unresponsive   bool `json:"unresponsive"`
		ConsideredDead bool `json:"considered_dead"`
	} `json:"status"`
}

// ncclInProgress is ncclResult_t 7 (src/nccl.h.in): a non-blocking init still under way.
const ncclInProgress = 7

// state names a reporting rank's state from its status flags.
func (r rasRank) state() string {
	st := r.Status
	switch {
	case st.AbortFlag:
		return "aborted"
	case st.AsyncError != 0 && st.AsyncError != ncclInProgress:
		return "async_error"
	case st.InitState == ncclInProgress:
		return "initializing"
	case st.InitState != 0:
		return "async_error"
	case st.FinalizeCalled || st.DestroyFlag:
		return "finalized"
	}
	return "running"
}

// state names a missing rank's state: dead once RAS considers its peer dead (peers.cc
// rasPeerIsDead), unresponsive when the peer did not answer this STATUS's collective, missing
// when the peer answered without the communicator.
func (m rasMissingRank) state() string {
	switch {
	case m.Status.ConsideredDead:
		return "dead"
	case m.Status.Unresponsive:
		return "unresponsive"
	}
	return "missing"
}

// queryRAS asks the RAS service at endpoint for its STATUS in JSON, following the ncclras client
// (src/ras/client.cc connectToNCCL, setOutputFormat, getNCCLStatus): "CLIENT PROTOCOL 2" is
// answered by "SERVER PROTOCOL <n>", "SET FORMAT json" by "OK", and STATUS by the document, after
// which the server closes the connection (client_support.cc, RAS_CLIENT_FINISHED). One deadline
// covers it all: a service that accepts and never answers costs one timeout, never a hung scrape.
func queryRAS(ctx context.Context, endpoint string, timeout time.Duration) (rasStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", endpoint)
	if err != nil {
		return rasStatus{}, rasError{"connect", err}
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return rasStatus{}, err
	}
	rd := bufio.NewReader(conn)
	exchange := func(cmd, wantPrefix string) (string, error) {
		if _, err := io.WriteString(conn, cmd+"\n"); err != nil {
			return "", fmt.Errorf("sending %q: %w", cmd, err)
		}
		line, err := rd.ReadString('\n')
		if err != nil {
			return "", fmt.Errorf("no answer to %q: %w", cmd, err)
		}
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(strings.ToUpper(line), wantPrefix) {
			return line, fmt.Errorf("%q answered %q, want %s", cmd, line, wantPrefix)
		}
		return line, nil
	}
	if _, err := exchange(fmt.Sprintf("CLIENT PROTOCOL %d", rasClientProtocol), "SERVER PROTOCOL "); err != nil {
		return rasStatus{}, rasError{"handshake", err}
	}
	if line, err := exchange("SET FORMAT json", "OK"); err != nil {
		if strings.HasPrefix(line, "ERROR") {
			return rasStatus{}, rasError{"format", fmt.Errorf("the RAS service has no JSON output (NCCL before 2.28.7): %w", err)}
		}
		return rasStatus{}, rasError{"format", err}
	}
	if _, err := io.WriteString(conn, "STATUS\n"); err != nil {
		return rasStatus{}, rasError{"status", fmt.Errorf("sending STATUS: %w", err)}
	}
	body, err := io.ReadAll(rd)
	if err != nil {
		return rasStatus{}, rasError{"status", fmt.Errorf("reading STATUS: %w", err)}
	}
	var st rasStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return rasStatus{}, rasError{"status", fmt.Errorf("STATUS is not the JSON document of NCCL 2.28.7+: %w", err)}
	}
	if st.Communicators == nil && !strings.Contains(string(body), `"communicators"`) {
		return rasStatus{}, rasError{"status", errors.New("STATUS: communicators: missing")}
	}
	return st, nil
}

// rasError is a failed query with the step it failed at, so that the same failure is said once
// even though its text (an ephemeral port) changes from query to query.
type rasError struct {
	step string
	err  error
}

func (e rasError) Error() string { return e.err.Error() }
func (e rasError) Unwrap() error { return e.err }

// rasPoller asks the RAS service for its status, saying an outage once and the recovery once.
// One outage often fails at more than one step (a query cut off mid-answer when the job ends,
// then connections refused): a new step is worth a debug line, not a second "not answering".
type rasPoller struct {
	cfg    RASConfig
	logger *zap.Logger
	said   string // the step the query last failed at; empty while the service answers
}

// poll returns the service's STATUS, or nil when it does not answer.
func (p *rasPoller) poll(ctx context.Context) *rasStatus {
	st, err := queryRAS(ctx, p.cfg.Endpoint, p.cfg.Timeout)
	if err != nil {
		step := "query"
		var re rasError
		if errors.As(err, &re) {
			step = re.step
		}
		switch p.said {
		case "":
			p.logger.Info("NCCL RAS service not answering; RAS metrics are left out until it does",
				zap.String("ras.endpoint", p.cfg.Endpoint), zap.Error(err))
		case step:
		default:
			p.logger.Debug("NCCL RAS service still not answering, now failing at another step",
				zap.String("ras.endpoint", p.cfg.Endpoint), zap.String("step", step), zap.Error(err))
		}
		p.said = step
		return nil
	}
	if p.said != "" {
		p.logger.Info("NCCL RAS service answering again", zap.String("ras.endpoint", p.cfg.Endpoint))
		p.said = ""
	}
	return &st
}
