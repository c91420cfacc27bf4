package filestorageextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/filestorageextension"

import (
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
	"go.opentelemetry.io/collector/pdata/xpdata/request"
)

// checkResult is what reading one database found: err is nil for a sound file; requests and
// items count what could be read of an exporter's persistent queue before the damage.
type checkResult struct {
	err      error
	signal   string // metrics, logs or traces: the queue's signal, from the file's name
	size     int64  // the file's size in bytes
	requests int
	items    int // points, log records or spans
}

// openTimeout: how long to wait for the file's lock; a file another process holds is not
// checked (bbolt returns errors.ErrTimeout).
const openTimeout = time.Second

// checkDatabase opens path read-only and reads every key of every bucket in this goroutine,
// where a bbolt panic (a page that does not identify as itself, common.Page.FastCheck) or a
// fault on the mapped file (a file shorter than its meta page says: SIGBUS) can be recovered:
// debug.SetPanicOnFault turns the fault into a panic. bbolt's own Tx.Check runs in a goroutine of
// its own (tx_check.go), where neither could be.
func checkDatabase(path string) (res checkResult) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			res.err = fmt.Errorf("bbolt: %v", r)
		}
	}()
	res.signal = queueSignal(path)
	if fi, err := os.Stat(path); err == nil {
		res.size = fi.Size()
	}
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: openTimeout})
	if err != nil {
		if errors.Is(err, berrors.ErrTimeout) {
			return res // in use: not ours to judge
		}
		res.err = err
		return res
	}
	defer db.Close()
	res.err = db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				res.count(k, v)
				return nil
			})
		})
	})
	if res.err == nil {
		res.requests, res.items = 0, 0 // a sound file: nothing lost
	}
	return res
}

// count adds one queue entry: the exporterhelper's persistent queue (v0.165.0
// internal/queue/persistent_queue.go) keeps each request under its decimal index, besides its
// metadata key (qmv0), encoded by pdata/xpdata/request (MarshalMetrics and the like).
func (r *checkResult) count(k, v []byte) {
	if _, err := strconv.ParseUint(string(k), 10, 64); err != nil {
		return
	}
	r.requests++
	switch r.signal {
	case "metrics":
		if _, md, err := request.UnmarshalMetrics(v); err == nil {
			r.items += md.DataPointCount()
		}
	case "logs":
		if _, ld, err := request.UnmarshalLogs(v); err == nil {
			r.items += ld.LogRecordCount()
		}
	case "traces":
		if _, td, err := request.UnmarshalTraces(v); err == nil {
			r.items += td.SpanCount()
		}
	}
}

// queueSignal: an exporter's queue asks file_storage for a client named after its signal
// (exporterhelper: GetClient(ctx, KindExporter, id, signal)), so its file ends in _metrics,
// _logs or _traces.
func queueSignal(path string) string {
	for _, s := range []string{"metrics", "logs", "traces"} {
		if strings.HasSuffix(path, "_"+s) {
			return s
		}
	}
	return ""
}
