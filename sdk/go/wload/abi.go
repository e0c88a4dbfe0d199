// Canonical ABI helpers: strings and lists across the component boundary.
// Memory the host writes results into comes from cabi_realloc; it is kept
// reachable in `allocs` (so the GC cannot reuse it while the host still
// writes) until the result has been copied into Go values.

package wload

import "unsafe"

// allocs holds every block handed to the host since the last lift.
var allocs [][]byte

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	// Over-allocate so the block can be aligned to `align` (at most 8).
	buf := make([]byte, newSize+align)
	allocs = append(allocs, buf)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p = (p + uintptr(align) - 1) &^ (uintptr(align) - 1)
	if oldPtr != nil && oldSize > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(p)), newSize), unsafe.Slice((*byte)(oldPtr), oldSize))
	}
	return unsafe.Pointer(p)
}

// released forgets the host's blocks once their contents were copied.
func released() {
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

// liftString is the string stored as (ptr, len) at p+off. It is not
// copied: the host wrote it into a block from cabi_realloc that nothing
// else uses, which the string now keeps alive.
func liftString(p unsafe.Pointer, off uintptr) string {
	ptr, n := u32At(p, off), u32At(p, off+4)
	if n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Pointer(uintptr(ptr))), n)
}

// liftBytes is the list<u8> stored as (ptr, len) at p, not copied either.
func liftBytes(p unsafe.Pointer) []byte {
	ptr, n := u32At(p, 0), u32At(p, 4)
	if n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(uintptr(ptr))), n)
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
