// Memory for the WASI preview 1 adapter, which wload links in front of
// this module when it makes it a component. The adapter asks for memory
// (a page of state and a 64 KiB stack) on its first call, which the Go
// runtime makes while it starts, before any exported Go function may run;
// and memory it added with memory.grow would be where the Go heap grows
// next. So its memory is this array: the engine finds it by its first
// bytes ("wload:adapter:v1" and the size) and gives the adapter a bump
// allocator over it. Go never reads or writes it.

package wload

import "unsafe"

const arenaWords = (2*64<<10 + 4<<10) / 8

// The first 16 bytes spell wload:adapter:v1 (little-endian words); the
// third word is the arena's size in bytes.
var adapterArena = [arenaWords]uint64{0x64613a64616f6c77, 0x31763a7265747061, arenaWords * 8}

// arenaAt keeps the arena in the binary: the linker drops unreferenced data.
var arenaAt uintptr

func init() { arenaAt = uintptr(unsafe.Pointer(&adapterArena)) }
