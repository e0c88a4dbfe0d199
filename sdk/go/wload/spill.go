// The spill area: where cabi_realloc puts results that fit in no buffer,
// without the Go allocator. It is the top of linear memory, grown with
// memory.grow: the Go runtime counts the memory it grew itself and grows
// it again by what it needs, never by looking at its size, so the pages
// grown here stay past the end of what Go knows of. As Go grows, it takes
// the pages the area had and the area moves up; Go takes them as fresh
// memory, so they are zeroed (unspill) before Go can allocate again.

//go:build !tinygo

package wload

import "unsafe"

// memoryPages is the size of linear memory in 64 KiB pages.
func memoryPages() uint32

// growMemory adds pages to linear memory: the old size in pages, or -1.
func growMemory(pages uint32) int32

const wasmPage = 64 << 10

var (
	// spillPages were grown here: the top of memory, past Go's heap.
	spillPages uint32
	// spillAt is where the running call's spill started, spillUsed what it
	// wrote; spilled says fetch must make the call again.
	spillAt, spillUsed uintptr
	spilled            bool
)

// spill is n bytes aligned to a in the spill area, grown to fit.
func spill(n, a uintptr) unsafe.Pointer {
	if !spilled {
		spillAt, spillUsed, spilled = uintptr(memoryPages()-spillPages)*wasmPage, 0, true
	}
	p := (spillAt + spillUsed + a - 1) &^ (a - 1)
	if top := uintptr(memoryPages()) * wasmPage; p+n > top {
		more := uint32((p + n - top + wasmPage - 1) / wasmPage)
		if growMemory(more) < 0 {
			// The --vu-memory limit: the engine reports it when the
			// instance traps, which this panic makes it do.
			panic("wload: no memory left for the engine's results")
		}
		spillPages += more
	}
	spillUsed = p + n - spillAt
	return unsafe.Pointer(p)
}

// unspill zeroes what the running call wrote to the spill area, which
// Go's allocator takes as zeroed memory when it next grows.
func unspill() {
	if spilled {
		clear(unsafe.Slice((*byte)(unsafe.Pointer(spillAt)), spillUsed))
		spillAt, spillUsed, spilled = 0, 0, false
	}
}

// inSpill says whether the n bytes at ptr were written to the spill area
// by the running call.
func inSpill(ptr, n uint32) bool {
	return spilled && n > 0 && uintptr(ptr) < spillAt+spillUsed && uintptr(ptr)+uintptr(n) > spillAt
}
