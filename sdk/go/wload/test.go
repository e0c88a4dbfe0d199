// Package wload writes wload load tests in Go (Go ≥ 1.24 or TinyGo): a
// Test registered with Register from an init function, exported as the
// world wload:test/test@0.2.0 through the go:wasmexport functions below.
package wload

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"unsafe"
)

// Test is a load test. Iteration runs once per iteration; data is the
// JSON text Setup returned ("" when none).
type Test interface {
	Iteration(data string) error
}

// Options is implemented by tests with default options (k6 JSON).
type Options interface{ Options() string }

// Setup is implemented by tests that prepare data once before the VUs start.
type Setup interface{ Setup() (string, error) }

// Teardown is implemented by tests that clean up after the VUs stop.
type Teardown interface{ Teardown(data string) error }

// Execs is implemented by tests with more entry points for scenarios' exec.
type Execs interface {
	Functions() []string
	Exec(name, data string) error
}

var registered Test

// Register sets this module's test; call it from an init function.
func Register(t Test) { registered = t }

func the() Test {
	if registered == nil {
		panic("no test registered: call wload.Register from an init function")
	}
	return registered
}

// Export return area; the heap blocks it points to stay reachable in
// `keep` until the engine calls the post-return function.
var (
	exportRet [4]uint64
	keep      []string
)

func lowerOwned(s string, at unsafe.Pointer) {
	keep = append(keep, s)
	p, l := strPtr(s)
	*(*uint32)(at) = ptr32(p)
	*(*uint32)(unsafe.Add(at, 4)) = l
}

func area() unsafe.Pointer {
	exportRet = [4]uint64{}
	return unsafe.Pointer(&exportRet[0])
}

// guard turns a panic into vu.report-panic, with where it happened, and
// then ends the instance (the engine gives the VU a fresh one) through
// os.Exit: a panic let through would also print Go's whole traceback.
func guard() {
	if r := recover(); r != nil {
		msg := fmt.Sprint(r)
		if at := panicSite(); at != "" {
			msg += " (at " + at + ")"
		}
		reportPanic(msg)
		os.Exit(2)
	}
}

// panicSite is the function and line that panicked: the first frame
// outside the runtime and this package (whose own panics are about how the
// test called it); "" where the toolchain keeps no frames.
func panicSite() string {
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(3, pcs)])
	for {
		f, more := frames.Next()
		if f.Function != "" && !strings.HasPrefix(f.Function, "runtime.") && !strings.HasPrefix(f.Function, "wload/sdk/wload.") {
			return fmt.Sprintf("%s, %s:%d", f.Function, filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

func resultUnit(err error) unsafe.Pointer {
	p := area()
	if err != nil {
		*(*uint8)(p) = 1
		lowerOwned(err.Error(), unsafe.Add(p, 4))
	}
	return p
}

func setupData() string {
	d, _ := SetupData()
	return d
}

//go:wasmexport options
func exportOptions() unsafe.Pointer {
	defer guard()
	p := area()
	s := ""
	if o, ok := the().(Options); ok {
		s = o.Options()
	}
	lowerOwned(s, p)
	return p
}

//go:wasmexport setup
func exportSetup() unsafe.Pointer {
	defer guard()
	defer closeResponses()
	s, ok := the().(Setup)
	if !ok {
		return area()
	}
	data, err := s.Setup()
	p := area()
	switch {
	case err != nil:
		*(*uint8)(p) = 1
		lowerOwned(err.Error(), unsafe.Add(p, 4))
	case data != "":
		*(*uint8)(unsafe.Add(p, 4)) = 1
		lowerOwned(data, unsafe.Add(p, 8))
	}
	return p
}

// entryNames are the entry points in the order functions() gives them:
// "default" first. Asked of the test once: the list must not change.
func entryNames() []string {
	if entries == nil {
		entries = []string{"default"}
		if e, ok := the().(Execs); ok {
			entries = append(entries, e.Functions()...)
		}
	}
	return entries
}

var entries []string

//go:wasmexport functions
func exportFunctions() unsafe.Pointer {
	defer guard()
	names := entryNames()
	list := make([]uint32, 2*len(names))
	for i, n := range names {
		keep = append(keep, n)
		p, l := strPtr(n)
		list[2*i], list[2*i+1] = ptr32(p), l
	}
	keepLists = append(keepLists, list)
	p := area()
	*(*uint32)(p) = ptr32(unsafe.Pointer(unsafe.SliceData(list)))
	*(*uint32)(unsafe.Add(p, 4)) = uint32(len(names))
	return p
}

var keepLists [][]uint32

// exportIteration runs the entry point functions()[entry]: 0 is
// Iteration, the others go to Exec by name.
//
//go:wasmexport iteration
func exportIteration(entry uint32) unsafe.Pointer {
	defer guard()
	defer closeResponses()
	names := entryNames()
	if uint64(entry) >= uint64(len(names)) {
		return resultUnit(fmt.Errorf("this test has no entry point number %d; it exports %s", entry, strings.Join(names, ", ")))
	}
	t := the()
	if entry == 0 {
		return resultUnit(t.Iteration(setupData()))
	}
	return resultUnit(t.(Execs).Exec(names[entry], setupData()))
}

//go:wasmexport teardown
func exportTeardown() unsafe.Pointer {
	defer guard()
	defer closeResponses()
	if td, ok := the().(Teardown); ok {
		return resultUnit(td.Teardown(setupData()))
	}
	return resultUnit(nil)
}

// Post-return: the engine has copied the results; let the GC have them.
func postReturn() {
	clear(keep)
	keep = keep[:0]
	clear(keepLists)
	keepLists = keepLists[:0]
}

//go:wasmexport cabi_post_options
func postOptions(unsafe.Pointer) { postReturn() }

//go:wasmexport cabi_post_setup
func postSetup(unsafe.Pointer) { postReturn() }

//go:wasmexport cabi_post_functions
func postFunctions(unsafe.Pointer) { postReturn() }

//go:wasmexport cabi_post_iteration
func postIteration(unsafe.Pointer) { postReturn() }

//go:wasmexport cabi_post_teardown
func postTeardown(unsafe.Pointer) { postReturn() }
