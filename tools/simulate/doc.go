// Package simulate writes recordings (internal/recording) of the simulated cluster's cases
// (internal/scenario) and collector configurations that replay them: the recordings replay through
// the real receivers, so the simulated numbers go through every line of code that real ones do.
// `make demo` and the end-to-end tests (distributions/otelcol-iclens) use it.
package simulate // import "github.com/otelcol-iclens/otelcol-iclens/tools/simulate"
