package burst // import "github.com/otelcol-iclens/otelcol-iclens/internal/burst"

import (
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// sleepTicks wakes the loop on an OS thread of its own with clock_nanosleep(CLOCK_MONOTONIC,
// TIMER_ABSTIME) to each tick: the kernel's hrtimer wakes that one thread, and the Go scheduler has
// no timer to run and no goroutine to hand over a hundred times a second (a time.Ticker's wakeup
// goes through the runtime's timer heap, a channel send and the scheduler, whose idle threads spin
// looking for work before they sleep again). The thread is in a system call while it sleeps, so
// it holds no P from the rest of the collector. Absolute deadlines on a period grid keep the mean
// period exact; a late pass drops the ticks it missed (nextTick).
type sleepTicks struct {
	period int64
	next   int64
	stop   <-chan struct{}
}

func newSleepTicks(period time.Duration, stop <-chan struct{}) tickSource {
	return &sleepTicks{period: period.Nanoseconds(), stop: stop}
}

func monotonicNow() int64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

func (t *sleepTicks) wait() bool {
	if t.next == 0 {
		// For the goroutine's life: when it returns, its thread ends with it.
		runtime.LockOSThread()
		t.next = monotonicNow()
	}
	t.next = nextTick(t.next, monotonicNow(), t.period)
	ts := unix.NsecToTimespec(t.next)
	for unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil) == unix.EINTR {
	}
	select {
	case <-t.stop:
		return false
	default:
		return true
	}
}
