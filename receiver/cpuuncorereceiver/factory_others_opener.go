package cpuuncorereceiver // import "github.com/otelcol-iclens/otelcol-iclens/receiver/cpuuncorereceiver"

import "github.com/otelcol-iclens/otelcol-iclens/internal/perf"

// unsupportedOpener is the live source where there is no perf_event_open (the liveOpener of
// factory_others.go): the receiver logs once that the platform is unsupported and reports nothing
// (a replay still works). It is compiled on every platform, so that the behaviour off Linux is
// tested by the Linux CI (factory_others_test.go) and not only on a machine nobody tests on.
func unsupportedOpener() (perf.Opener, error) { return nil, errUnsupportedPlatform }
