// Canonical ABI helpers: strings and lists across the component boundary.
//
// The engine writes results into memory it asks for with cabi_realloc,
// in the middle of an import call. There the component model forbids
// calling out of the instance, and the Go allocator may start a garbage
// collection, which reads the clock through WASI: the instance would
// trap. So cabi_realloc hands out memory that was allocated before the
// call: a scratch buffer, reused once its contents were copied into Go
// values (released), or a buffer reserved for one result of a known size
// (a body). Only a result larger than both falls back to the allocator.

package wload

import "unsafe"

// scratch takes the results of one import call; it is emptied (used = 0)
// by released, after the results were copied out.
var (
	scratch = make([]byte, 32<<10)
	used    uintptr
)

// reserved, when set, takes the next result that fits: a body whose
// length was asked first. The caller keeps it; it is not reused.
var reserved []byte

// allocs keeps the fallback blocks reachable until they were copied.
var allocs [][]byte

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	a := uintptr(max(align, 1))
	var p uintptr
	if r := reserved; r != nil && oldPtr == nil && uintptr(newSize) <= uintptr(cap(r)) {
		reserved = nil
		p = uintptr(unsafe.Pointer(unsafe.SliceData(r)))
	} else {
		p = fromScratch(uintptr(newSize), a)
	}
	if p == 0 {
		// Larger than the scratch buffer: the allocator, which may
		// collect garbage (and trap) in the rare case it decides to.
		buf := make([]byte, uintptr(newSize)+a)
		allocs = append(allocs, buf)
		p = (uintptr(unsafe.Pointer(unsafe.SliceData(buf))) + a - 1) &^ (a - 1)
	}
	if oldPtr != nil && oldSize > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), newSize), unsafe.Slice((*byte)(oldPtr), min(oldSize, newSize)))
	}
	return unsafe.Pointer(p)
}

// fromScratch is n bytes aligned to a from the scratch buffer, or 0 when
// they do not fit.
func fromScratch(n, a uintptr) uintptr {
	base := uintptr(unsafe.Pointer(unsafe.SliceData(scratch)))
	at := (base + used + a - 1) &^ (a - 1)
	if at+n > base+uintptr(len(scratch)) {
		return 0
	}
	used = at + n - base
	return at
}

// reserve makes the next result of up to n bytes land in a buffer of its
// own, which is returned; call it before the import call.
func reserve(n uint64) []byte {
	reserved = make([]byte, n)
	return reserved
}

// released empties the scratch buffer and forgets the fallback blocks
// once the results of a call were copied.
func released() {
	used = 0
	reserved = nil
	clear(allocs)
	allocs = allocs[:0]
}

// ret is a return area for imports; 8-aligned through its element type.
var ret [8]uint64

func retPtr() unsafe.Pointer { return unsafe.Pointer(&ret[0]) }

func u32At(p unsafe.Pointer, off uintptr) uint32 { return *(*uint32)(unsafe.Add(p, off)) }
func u8At(p unsafe.Pointer, off uintptr) uint8   { return *(*uint8)(unsafe.Add(p, off)) }
func u64At(p unsafe.Pointer, off uintptr) uint64 { return *(*uint64)(unsafe.Add(p, off)) }

// strPtr is the (ptr, len) of s for a call; keep s alive across the call.
func strPtr(s string) (unsafe.Pointer, uint32) {
	return unsafe.Pointer(unsafe.StringData(s)), uint32(len(s))
}

// liftString copies the string stored as (ptr, len) at p+off.
func liftString(p unsafe.Pointer, off uintptr) string {
	ptr, n := u32At(p, off), u32At(p, off+4)
	if n == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n))
}

// liftOptionString reads an option<string> stored as (tag, ptr, len).
func liftOptionString(p unsafe.Pointer) (string, bool) {
	if u8At(p, 0) == 0 {
		return "", false
	}
	return liftString(p, 4), true
}

// field is a (name, value) pair in the canonical ABI: two (ptr, len).
type field struct {
	name, nameLen, value, valueLen uint32
}

// lowerFields lays out pairs for the host; keep `pairs` alive across the call.
func lowerFields(pairs [][2]string) (unsafe.Pointer, uint32) {
	if len(pairs) == 0 {
		return nil, 0
	}
	out := make([]field, len(pairs))
	for i, kv := range pairs {
		k, kl := strPtr(kv[0])
		v, vl := strPtr(kv[1])
		out[i] = field{uint32(uintptr(k)), kl, uint32(uintptr(v)), vl}
	}
	return unsafe.Pointer(unsafe.SliceData(out)), uint32(len(out))
}

// liftFields copies a list<tuple<string, string>> stored as (ptr, len) at p.
func liftFields(p unsafe.Pointer) [][2]string {
	ptr, n := u32At(p, 0), u32At(p, 4)
	out := make([][2]string, n)
	for i := range out {
		e := unsafe.Pointer(uintptr(ptr) + uintptr(i)*16)
		out[i] = [2]string{liftString(e, 0), liftString(e, 8)}
	}
	return out
}
