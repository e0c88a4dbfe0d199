// The running VU (id, iteration, scenario, -e variables, setup data,
// sleep, log) and checks.

package wload

import (
	"runtime"
	"time"
)

// VU is this VU's number (1-based; 0 in setup and teardown).
func VU() uint32 { return witVuID() }

// Iteration is the number of iterations this VU started before this one.
func Iteration() uint64 { return witVuIteration() }

// Scenario is the name of the scenario this VU runs.
func Scenario() string {
	fetch(func() { witVuScenario(retPtr()) })
	s := liftString(retPtr(), 0)
	released()
	return s
}

// Sleep pauses this VU without using a core.
func Sleep(d time.Duration) { witVuSleep(uint64(max(d, 0))) }

// Env is a `-e KEY=VALUE` variable, or fallback when it is not set.
func Env(key, fallback string) string {
	k, kl := strPtr(key)
	fetch(func() { witVuEnv(k, kl, retPtr()) })
	runtime.KeepAlive(key)
	v, ok := liftOptionString(retPtr())
	released()
	if !ok {
		return fallback
	}
	return v
}

// SetupData is the JSON text setup returned, if any.
func SetupData() (string, bool) {
	if setupKnown {
		return setupText, true
	}
	fetch(func() { witVuSetupData(retPtr()) })
	v, ok := liftOptionString(retPtr())
	released()
	// Once there, it is the same for the rest of the run: read it once,
	// not in every iteration.
	setupText, setupKnown = v, ok
	return v, ok
}

var (
	setupText  string
	setupKnown bool
)

// LogLevel is the severity of a log line.
type LogLevel uint32

const (
	Debug LogLevel = iota
	Info
	Warn
	Error
)

// Log writes a line to the engine's log, prefixed with the VU id.
func Log(level LogLevel, message string) {
	m, ml := strPtr(message)
	witVuLog(uint32(level), m, ml)
	runtime.KeepAlive(message)
}

// Check records one outcome of the check name and returns ok.
func Check(name string, ok bool) bool { return CheckTagged(name, ok, nil) }

// CheckTagged is Check with tags on the sample.
func CheckTagged(name string, ok bool, tags [][2]string) bool {
	n, nl := strPtr(name)
	t, tl := lowerFields(tags)
	var b uint32
	if ok {
		b = 1
	}
	r := witCheck(n, nl, b, t, tl) != 0
	runtime.KeepAlive(name)
	runtime.KeepAlive(tags)
	return r
}

func reportPanic(message string) {
	m, ml := strPtr(message)
	witVuReportPanic(m, ml)
	runtime.KeepAlive(message)
}

// Group runs fn inside the group name, as k6's group: requests, checks and
// metrics inside carry the tag group=::outer::name, and each pass is timed
// in group_duration. Groups nest.
func Group(name string, fn func()) {
	n, nl := strPtr(name)
	witVuGroupEnter(n, nl)
	runtime.KeepAlive(name)
	defer witVuGroupExit()
	fn()
}
