// With TinyGo, results that fit in no buffer are allocated: TinyGo's
// collector reads no clock and calls nothing outside the instance, and
// its heap takes every page of linear memory, so the spill area of
// spill.go would be in it.

//go:build tinygo

package wload

import "unsafe"

// spilled is never set: the results are in Go memory already.
const spilled = false

// allocs keeps the blocks reachable until the results were copied.
var allocs [][]byte

func spill(n, a uintptr) unsafe.Pointer {
	buf := make([]byte, n+a)
	allocs = append(allocs, buf)
	return unsafe.Pointer((uintptr(unsafe.Pointer(unsafe.SliceData(buf))) + a - 1) &^ (a - 1))
}

func unspill() {
	clear(allocs)
	allocs = allocs[:0]
}

// inSpill is never true: spilled results are in Go memory.
func inSpill(ptr, n uint32) bool { return false }
