package lensviewexporter // import "github.com/otelcol-iclens/otelcol-iclens/exporter/lensviewexporter"

// ring holds the newest points of one series, oldest first, in at most cap(t) slots. It grows
// to its capacity as points come and then overwrites the oldest, so a series costs memory in
// proportion to what it has shown, never more than its window.
type ring struct {
	t    []int64   // unix milliseconds
	v    []float64 // value at t
	next int       // slot the next point goes to once the ring is full
	max  int
}

func newRing(max int) *ring { return &ring{max: max} }

func (r *ring) len() int { return len(r.t) }

// last returns the newest point; ok is false on an empty ring.
func (r *ring) last() (t int64, v float64, ok bool) {
	if len(r.t) == 0 {
		return 0, 0, false
	}
	i := r.newest()
	return r.t[i], r.v[i], true
}

// recent returns the newest point's time and the time-weighted mean of the newest k rates (mean,
// observed.go): what a table shows as "now". One interval's rate alone moves with the scrape's
// timing on a loaded machine (a late scrape draws one rate low and the next high); over k
// intervals that pair mostly cancels, and the value still follows a change within k intervals.
func (r *ring) recent(k int) (t int64, v float64, ok bool) {
	n := len(r.t)
	if n == 0 {
		return 0, 0, false
	}
	i := r.newest()
	after := int64(-1 << 63)
	if n > k {
		after = r.t[(i+n-k)%n]
	}
	return r.t[i], mean(r, after), true
}

// step is the time between the two newest points (0 with fewer than two).
func (r *ring) step() int64 {
	if len(r.t) < 2 {
		return 0
	}
	i := r.newest()
	return r.t[i] - r.t[(i+len(r.t)-1)%len(r.t)]
}

func (r *ring) newest() int {
	if len(r.t) < r.max {
		return len(r.t) - 1
	}
	return (r.next + r.max - 1) % r.max
}

// push appends a point. A point at the newest point's time is added to it: several devices
// (IIO stacks, memory controllers) of one scrape sum into one series. A point older than the
// newest is dropped: a ring is in time order.
func (r *ring) push(t int64, v float64) { r.put(t, v, mergeAdd) }

// set appends a point like push, but a point at the newest point's time replaces it (a gauge,
// a verdict).
func (r *ring) set(t int64, v float64) { r.put(t, v, mergeReplace) }

// raise appends a point like push, but a point at the newest point's time keeps the larger of
// the two: the busiest of several devices of one scrape (their peaks, which sum to nothing).
func (r *ring) raise(t int64, v float64) { r.put(t, v, mergeMax) }

// merge is what a point at the newest point's time does to it.
type merge int

const (
	mergeAdd merge = iota
	mergeReplace
	mergeMax
)

func (r *ring) put(t int64, v float64, how merge) {
	if lt, _, ok := r.last(); ok {
		if t == lt {
			i := r.newest()
			switch how {
			case mergeAdd:
				r.v[i] += v
			case mergeReplace:
				r.v[i] = v
			case mergeMax:
				r.v[i] = max(r.v[i], v)
			}
			return
		}
		if t < lt {
			return
		}
	}
	if len(r.t) < r.max {
		if len(r.t) == cap(r.t) {
			r.grow()
		}
		r.t = append(r.t, t)
		r.v = append(r.v, v)
		return
	}
	r.t[r.next], r.v[r.next] = t, v
	r.next = (r.next + 1) % r.max
}

// grow doubles the slots, never beyond max: append's own growth would overshoot the bound.
func (r *ring) grow() {
	n := min(r.max, max(16, 2*cap(r.t)))
	t := make([]int64, len(r.t), n)
	v := make([]float64, len(r.v), n)
	copy(t, r.t)
	copy(v, r.v)
	r.t, r.v = t, v
}

// since calls fn for every point newer than after, oldest first.
func (r *ring) since(after int64, fn func(t int64, v float64)) {
	n := len(r.t)
	start := 0
	if n == r.max {
		start = r.next
	}
	for k := range n {
		i := (start + k) % n
		if r.t[i] > after {
			fn(r.t[i], r.v[i])
		}
	}
}
