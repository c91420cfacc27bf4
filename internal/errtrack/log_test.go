package errtrack

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestLogFailRecover(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := NewLog(zap.New(core))
	einval, eio := errors.New("EINVAL"), errors.New("EIO")

	assert.True(t, l.Fail("mlx5_0/port_rcv_data", "Counter read failed", einval, zap.String("device", "mlx5_0")))
	assert.False(t, l.Fail("mlx5_0/port_rcv_data", "Counter read failed", einval))
	assert.True(t, l.IsFailing("mlx5_0/port_rcv_data"))
	assert.True(t, l.Fail("mlx5_0/port_rcv_data", "Counter read failed", eio), "a new error is news")
	assert.Equal(t, 1, l.Failing())
	assert.True(t, l.Recover("mlx5_0/port_rcv_data", "Counter read again"))
	assert.False(t, l.Recover("mlx5_0/port_rcv_data", "Counter read again"))

	entries := logs.AllUntimed()
	if assert.Len(t, entries, 3) {
		assert.Equal(t, zapcore.WarnLevel, entries[0].Level)
		assert.Equal(t, "Counter read failed", entries[0].Message)
		ctx := entries[0].ContextMap()
		assert.Equal(t, "mlx5_0/port_rcv_data", ctx["key"])
		assert.Equal(t, "EINVAL", ctx["error"])
		assert.Equal(t, "mlx5_0", ctx["device"])
		assert.Equal(t, zapcore.InfoLevel, entries[2].Level)
	}
}

func TestLogOnceAndForget(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := NewLog(zap.New(core))
	assert.True(t, l.Once("gpu0/nvlink", zapcore.InfoLevel, "Counter not provided by the hardware"))
	assert.False(t, l.Once("gpu0/nvlink", zapcore.InfoLevel, "Counter not provided by the hardware"))
	l.Fail("gpu0/pcie", "Read failed", errors.New("x"))
	l.Forget(func(k string) bool { return false })
	assert.Zero(t, l.Failing())
	assert.True(t, l.Once("gpu0/nvlink", zapcore.InfoLevel, "Counter not provided by the hardware"), "said again after Forget")
	assert.Equal(t, 3, logs.Len())
}

func TestLogNamesItsCaller(t *testing.T) {
	core, logs := observer.New(zapcore.DebugLevel)
	l := NewLog(zap.New(core, zap.AddCaller()))
	l.Once("k", zapcore.InfoLevel, "fact")
	assert.Contains(t, logs.All()[0].Caller.File, "log_test.go", "the line names who said it, not errtrack")
}
