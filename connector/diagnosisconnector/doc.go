// Package diagnosisconnector names the interconnect fault each node is in, from the rnic,
// cpuuncore and gpu receivers' metrics: a verdict gauge with its evidence ratios, and one log record
// per verdict change (README.md).
package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"
