// Custom metrics: counters, gauges, rates and trends. Declare them as
// package variables; the engine is asked for the metric on first use.

package wload

import (
	"runtime"
	"time"
)

type metric struct {
	name    string
	kind    uint32
	isTime  bool
	id      uint32
	defined bool
}

func (m *metric) record(value float64, tags [][2]string) {
	if !m.defined {
		n, nl := strPtr(m.name)
		var t uint32
		if m.isTime {
			t = 1
		}
		kind := m.kind
		fetch(func() { witDefine(n, nl, kind, t, retPtr()) })
		runtime.KeepAlive(m.name)
		if u8At(retPtr(), 0) != 0 {
			why := liftString(retPtr(), 4)
			released()
			panic("cannot define metric " + m.name + ": " + why)
		}
		m.id, m.defined = u32At(retPtr(), 4), true
	}
	p, l := lowerFields(tags)
	witAdd(m.id, value, p, l)
	runtime.KeepAlive(tags)
}

// Counter is a sum: count and rate per second.
type Counter struct{ m metric }

func NewCounter(name string) *Counter { return &Counter{metric{name: name, kind: 0}} }

func (c *Counter) Add(v float64)                         { c.m.record(v, nil) }
func (c *Counter) AddTagged(v float64, tags [][2]string) { c.m.record(v, tags) }

// Gauge is the last value set, with min and max.
type Gauge struct{ m metric }

func NewGauge(name string) *Gauge { return &Gauge{metric{name: name, kind: 1}} }

func (g *Gauge) Set(v float64)                         { g.m.record(v, nil) }
func (g *Gauge) SetTagged(v float64, tags [][2]string) { g.m.record(v, tags) }

// Rate is the share of true outcomes.
type Rate struct{ m metric }

func NewRate(name string) *Rate { return &Rate{metric{name: name, kind: 2}} }

func (r *Rate) Add(ok bool) { r.AddTagged(ok, nil) }

func (r *Rate) AddTagged(ok bool, tags [][2]string) {
	v := 0.0
	if ok {
		v = 1
	}
	r.m.record(v, tags)
}

// Trend is a distribution with avg, min, med, max and percentiles.
type Trend struct{ m metric }

func NewTrend(name string) *Trend { return &Trend{metric{name: name, kind: 3}} }

// NewTimeTrend is a Trend of durations, shown in the summary as times.
func NewTimeTrend(name string) *Trend { return &Trend{metric{name: name, kind: 3, isTime: true}} }

func (t *Trend) Add(v float64)                         { t.m.record(v, nil) }
func (t *Trend) AddTagged(v float64, tags [][2]string) { t.m.record(v, tags) }

// AddDuration adds d in milliseconds.
func (t *Trend) AddDuration(d time.Duration) { t.m.record(float64(d)/1e6, nil) }
