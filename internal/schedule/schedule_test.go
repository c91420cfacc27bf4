package schedule

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSchedule(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := New(time.Minute)
	assert.True(t, s.Due(t0), "never ran")
	s.Done(t0)
	assert.False(t, s.Due(t0.Add(59*time.Second)))
	assert.True(t, s.Due(t0.Add(time.Minute)))
	s.Request()
	assert.True(t, s.Due(t0.Add(time.Second)), "requested")
	s.Done(t0.Add(time.Second))
	assert.False(t, s.Due(t0.Add(2*time.Second)))
}

func TestScheduleOnRequestOnly(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := New(0)
	assert.True(t, s.Due(t0))
	s.Done(t0)
	assert.False(t, s.Due(t0.Add(24*time.Hour)))
	s.Request()
	assert.True(t, s.Due(t0))
}
