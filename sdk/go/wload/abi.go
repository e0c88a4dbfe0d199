// Canonical ABI helpers: strings and lists across the component boundary.
//
// The engine writes results into memory it asks for with cabi_realloc,
// in the middle of an import call. There the component model forbids
// calling out of the instance, and the Go allocator may start or assist a
// garbage collection, or return memory to the system, all of which read
// the clock through WASI: the instance would trap. So cabi_realloc never
// allocates. It hands out a scratch buffer, reused once its contents were
// copied into Go values (released), or a buffer allocated before the call
// for results of a known size (a body, a batch's responses), and past
// both, the spill area (spill.go). Results that went there are fetched
// again into a buffer of the size they took (fetch).

package wload

import "unsafe"

// scratch takes the results of one import call; it is emptied (used = 0)
// by released, after the results were copied out.
var (
	scratch = make([]byte, 32<<10)
	used    uintptr
)

// reserved, when set, takes the next results that fit, before scratch:
// the caller allocated it for them and keeps it.
var (
	reserved     []byte
	reservedUsed uintptr
)

// demand is what the results of the running call asked for, with their
// alignment: the size of the buffer that takes them all when they are
// fetched again.
var demand uintptr

//go:wasmexport cabi_realloc
func cabiRealloc(oldPtr unsafe.Pointer, oldSize, align, newSize uint32) unsafe.Pointer {
	if newSize == 0 {
		return unsafe.Pointer(uintptr(align))
	}
	n, a := uintptr(newSize), uintptr(max(align, 1))
	demand += n + a - 1
	p := bump(reserved, &reservedUsed, n, a)
	if p == nil {
		p = bump(scratch, &used, n, a)
	}
	if p == nil {
		p = spill(n, a)
	}
	if oldPtr != nil && oldSize > 0 {
		copy(unsafe.Slice((*byte)(p), newSize), unsafe.Slice((*byte)(oldPtr), min(oldSize, newSize)))
	}
	return p
}

// bump is n bytes aligned to a from buf past *at, or nil when they do
// not fit.
func bump(buf []byte, at *uintptr, n, a uintptr) unsafe.Pointer {
	if len(buf) == 0 {
		return nil
	}
	base := uintptr(unsafe.Pointer(unsafe.SliceData(buf)))
	p := (base + *at + a - 1) &^ (a - 1)
	if p+n > base+uintptr(len(buf)) {
		return nil
	}
	*at = p + n - base
	return unsafe.Pointer(p)
}

// reserve makes the next results of up to n bytes in all land in a
// buffer of their own, which is returned; call it before the import call.
func reserve(n uint64) []byte {
	reserved, reservedUsed = make([]byte, n), 0
	return reserved
}

// fetch makes call, an import whose results the engine writes through
// cabi_realloc, and returns once they are all in Go memory. When some
// went to the spill area, which Go's allocator must not see, they are
// dropped and the call is made again into a buffer of the size they
// took: every import called this way only reads. Copy the results, then
// call released.
func fetch(call func()) {
	call()
	for spilled {
		need := demand
		released()
		reserve(uint64(need))
		used = uintptr(len(scratch)) // all into the new buffer
		call()
	}
}

// released empties the buffers once the results of a call were copied.
func released() {
	used, demand = 0, 0
	reserved, reservedUsed = nil, 0
	unspill()
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
