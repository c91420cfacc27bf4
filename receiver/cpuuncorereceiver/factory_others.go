//go:build !linux

package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import "github.com/otelcol-iclens/otelcol-iclens/internal/perf"

// liveOpener: uncore PMUs are read through Linux perf_event_open only (unsupportedOpener).
func liveOpener() (perf.Opener, error) { return unsupportedOpener() }
