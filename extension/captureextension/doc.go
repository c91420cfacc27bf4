// Package captureextension writes, when asked, the last seconds a receiver saw at full
// resolution: the rings the receivers keep with bursts.capture set (the fast sampler's passes and
// the scrapes around them, internal/recording.Ring) become recordings in one directory, which
// the collector replays like any other (recording.replay). A 10 s average cannot show a 40 ms
// burst; the burst's recording can, after the fact, on any machine. The components do not know
// each other (internal/capture): the receivers register their rings, the diagnosis connector and
// the lens view trigger, the extension writes and prunes.
//
//go:generate mdatagen metadata.yaml
package captureextension // import "github.com/otelcol-iclens/otelcol-iclens/extension/captureextension"
