package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import "github.com/otelcol-iclens/otelcol-iclens/internal/perf"

// liveOpener is the running kernel's perf_event_open.
func liveOpener() (perf.Opener, error) { return &perf.Syscalls{}, nil }
