package lensviewexporter

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/otelcol-iclens/otelcol-iclens/internal/nodestate"
)

// TestBurstsBesideTheAverage feeds a port as the rnic receiver reports it with its fast sampler
// on (receiver/rnicreceiver metadata.yaml: rnic.burst.peak_rate by burst.window,
// rnic.burst.time_above in seconds by burst.share), moving in line-rate bursts for 40 ms of every
// 600 ms: the view draws the peak and the time above each share beside the 6.7 % average, the
// port's row says both, and the observed ratios still read the average alone.
func TestBurstsBesideTheAverage(t *testing.T) {
	const line = 50e9
	avg := line * 40 / 600
	st := newTestStore(t, nil)
	start := st.clock
	above := func(share string, secs float64) pt {
		return pt{name: nodestate.MetricBurstTimeAbove, sum: true, v: secs,
			attrs: map[string]string{"component": "rnic", "direction": "transmit", "device": "mlx5_0/1", "burst.share": share}}
	}
	for i := range 4 {
		at := start.Add(time.Duration(i) * time.Second)
		f := float64(i)
		st.feed(at, batch("n", start, at,
			ioPoint("rnic", "transmit", "mlx5_0/1", f*avg),
			gauge(nodestate.MetricPortRate, line, "device", "mlx5_0/1"),
			gauge(nodestate.MetricBurstPeak, line*0.99, "component", "rnic", "direction", "transmit", "device", "mlx5_0/1", "burst.window", "10ms"),
			above("0.5", f*0.07), above("0.9", f*0.0667),
		))
	}
	v := st.view(t, "n")
	peak, ok := seriesByLabel(v, "RNIC(mlx5_0)[TX] peak/10ms")
	require.True(t, ok, "the peak line: %v", labels(v))
	assert.Equal(t, kindPeak, peak.Kind)
	assert.Equal(t, axisBytes, peak.Axis)
	require.Len(t, peak.V, 4)
	assert.Equal(t, line*0.99, peak.V[3])
	at90, ok := seriesByLabel(v, "RNIC(mlx5_0)[TX] ≥90 % of line")
	require.True(t, ok, "the time-above line: %v", labels(v))
	assert.Equal(t, kindAbove, at90.Kind)
	assert.Equal(t, axisRatio, at90.Axis)
	require.NotEmpty(t, at90.V)
	assert.InDelta(t, 0.0667, at90.V[len(at90.V)-1], 1e-9, "seconds above per second")
	_, ok = seriesByLabel(v, "RNIC(mlx5_0)[TX] ≥50 % of line")
	assert.True(t, ok)

	require.Len(t, v.Ports, 1)
	p := v.Ports[0]
	assert.Equal(t, line*0.99, p.TransmitPeak)
	assert.Equal(t, "10ms", p.PeakWindow)
	assert.InDelta(t, 0.0667, p.TimeAbove["0.9"], 1e-9)
	assert.InDelta(t, 0.07, p.TimeAbove["0.5"], 1e-9)
	assert.InDelta(t, avg, p.TransmitRate, 1)

	assert.InDelta(t, avg/line, v.Observed.RDMATransmitLineShare, 1e-9, "the observed line share is the average's, not the peak's")
	assert.InDelta(t, avg, v.Observed.RDMABytesPerSecond, 1)
}

func TestSharePercent(t *testing.T) {
	assert.Equal(t, "90 %", sharePercent("0.9"))
	assert.Equal(t, "50 %", sharePercent("0.5"))
	assert.Equal(t, "99.5 %", sharePercent("0.995"))
	assert.Equal(t, "most", sharePercent("most"))
}

// TestUncoreBurstPeakOfTheBusiestDevice feeds host memory as the cpuuncore receiver reports it
// with its fast sampler on (receiver/cpuuncorereceiver metadata.yaml: cpuuncore.burst.peak_rate, a
// gauge per memory controller or IIO stack, with burst.window): two sockets' reads, the averages
// summed into one line as the chart draws them, and one peak line beside them at the higher of
// the two sockets' peaks (peaks over windows of their own do not add up).
func TestUncoreBurstPeakOfTheBusiestDevice(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	peak := func(dev string, v float64) pt {
		return gauge(nodestate.MetricUncoreBurstPeak, v, "component", "cpu_memory", "direction", "read", "device", dev, "burst.window", "10ms")
	}
	for i := range 4 {
		at := start.Add(time.Duration(i) * time.Second)
		f := float64(i)
		// socket0 bursts at 100 GB/s for 40 ms of every 600 ms (6.7 GB/s average), socket1 runs
		// a steady 2 GB/s; in the newest interval socket1 is the busier one.
		p0, p1 := 100e9, 2.1e9
		if i == 3 {
			p0, p1 = 1e9, 3e9
		}
		st.feed(at, batch("n", start, at,
			ioPoint("cpu_memory", "read", "socket0/imc", f*6.7e9),
			ioPoint("cpu_memory", "read", "socket1/imc", f*2e9),
			peak("socket0/imc", p0), peak("socket1/imc", p1),
		))
	}
	v := st.view(t, "n")
	line, ok := seriesByLabel(v, "CPU MEM[RD] peak/10ms (busiest device)")
	require.True(t, ok, "the peak line: %v", labels(v))
	assert.Equal(t, kindPeak, line.Kind)
	assert.Equal(t, axisBytes, line.Axis)
	assert.Equal(t, []float64{100e9, 100e9, 100e9, 3e9}, line.V, "the higher of the two sockets' peaks at each time, in the order they came")
	avg, ok := seriesByLabel(v, "CPU MEM[RD]")
	require.True(t, ok, "the average line: %v", labels(v))
	require.NotEmpty(t, avg.V)
	assert.InDelta(t, 8.7e9, avg.V[len(avg.V)-1], 1, "the averages still sum")
	n := 0
	for _, s := range v.Series {
		if s.Kind == kindPeak {
			n++
		}
	}
	assert.Equal(t, 1, n, "one peak line for the two devices: %v", labels(v))
}

// TestGPUBurstPeakPerGPU: the gpu receiver's gpu.burst.peak_rate draws one dotted line per GPU
// and direction beside that GPU's PCIe average, as a port's peak does (each GPU has its own line,
// so the peaks are not merged).
func TestGPUBurstPeakPerGPU(t *testing.T) {
	st := newTestStore(t, nil)
	start := st.clock
	for i := range 3 {
		at := start.Add(time.Duration(i) * time.Second)
		f := float64(i)
		st.feed(at, batch("n", start, at,
			ioPoint("gpu_pcie", "transmit", "gpu0", f*3.5e9), ioPoint("gpu_pcie", "transmit", "gpu1", f*1e9),
			gauge(nodestate.MetricGPUBurstPeak, 52e9, "component", "gpu_pcie", "direction", "transmit", "device", "gpu0", "burst.window", "10ms"),
			gauge(nodestate.MetricGPUBurstPeak, 1.2e9+f, "component", "gpu_pcie", "direction", "transmit", "device", "gpu1", "burst.window", "10ms"),
		))
	}
	v := st.view(t, "n")
	p0, ok := seriesByLabel(v, "GPU0 PCIe[TX] peak/10ms")
	require.True(t, ok, "gpu0's peak line: %v", labels(v))
	assert.Equal(t, kindPeak, p0.Kind)
	assert.Equal(t, []float64{52e9, 52e9, 52e9}, p0.V)
	p1, ok := seriesByLabel(v, "GPU1 PCIe[TX] peak/10ms")
	require.True(t, ok, "gpu1's peak line: %v", labels(v))
	assert.Equal(t, []float64{1.2e9, 1.2e9 + 1, 1.2e9 + 2}, p1.V)
	avg, ok := seriesByLabel(v, "GPU0 PCIe[TX]")
	require.True(t, ok, "the average beside it: %v", labels(v))
	assert.InDelta(t, 3.5e9, avg.V[len(avg.V)-1], 1)
}
