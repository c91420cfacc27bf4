package lensviewexporter

import (
	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
	"github.com/otelcol-iclens/otelcol-iclens/internal/verdict"
)

// The metric names the tests' synthetic batches use: the receivers' (internal/nodestate) and the
// diagnosis connector's (internal/verdict).
const (
	metricIO          = nodestate.MetricIO
	metricDRAMActive  = nodestate.MetricDRAMActive
	metricPortRate    = nodestate.MetricPortRate
	metricPortWidth   = nodestate.MetricPortWidth
	metricPortState   = nodestate.MetricPortState
	metricPortInfo    = nodestate.MetricPortInfo
	metricSaturated   = nodestate.MetricSaturated
	metricCNP         = nodestate.MetricCNP
	metricECN         = nodestate.MetricECN
	metricXmitWait    = nodestate.MetricXmitWait
	metricPFCPause    = nodestate.MetricPFCFrames
	metricTopoDist    = nodestate.MetricTopoDist
	metricTopoNearest = nodestate.MetricTopoNearest
	metricTopoReady   = nodestate.MetricTopoReady
	metricTopoACS     = nodestate.MetricTopoACS
	metricTopoIOMMU   = nodestate.MetricTopoIOMMU
	metricTopoDegrade = nodestate.MetricTopoDegrade
	metricTopoPeerMem = nodestate.MetricTopoPeerMem
	metricGPUInfo     = nodestate.MetricGPUInfo
	metricGPUWidth    = nodestate.MetricGPUWidth
	metricGPUMaxWidth = nodestate.MetricGPUMaxWidth
	metricVerdict     = verdict.MetricVerdict
	metricEvidence    = verdict.MetricEvidence
)
