// Package diagnosisconnector names the interconnect fault each node is in, from the rnic,
// cpuuncore and gpu receivers' metrics: a verdict gauge with its evidence ratios, and one log record
// per verdict change (README.md). What it emits is the contract of internal/verdict; what it reads
// is a node's state as internal/nodestate decodes it.
//
// Besides NewFactory and Config, its API is the Prometheus rules generator: PrometheusRules(cfg)
// returns the same verdicts as a RuleFile (RuleGroup, Rule) for Prometheus-compatible rule
// engines, which RuleFile.YAML writes as a rule file and RuleFile.PrometheusRuleYAML as a
// Prometheus Operator PrometheusRule.
package diagnosisconnector // import "github.com/otelcol-iclens/otelcol-iclens/connector/diagnosisconnector"
