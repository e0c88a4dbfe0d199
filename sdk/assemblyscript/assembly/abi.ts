// Canonical ABI helpers: moving strings, byte lists and (name, value) lists
// across the component boundary. Buffers the host fills come from
// `cabi_realloc` (the runtime's heap) and are freed once copied into
// managed AssemblyScript objects.

/** A static return area for imports that return through a pointer. */
export const RET: usize = memory.data(64, 8);

/** Free host-allocated memory; pointers below the heap are not ours. */
export function release(ptr: usize): void {
  if (ptr >= __heap_base) heap.free(ptr);
}

/** UTF-8 bytes of `s`; keep the result alive while the host reads it. */
export function utf8(s: string): ArrayBuffer {
  return String.UTF8.encode(s);
}

/** Lift a string the host wrote at (ptr, len), freeing its buffer. */
export function liftString(ptr: usize, len: usize): string {
  const s = String.UTF8.decodeUnsafe(ptr, len);
  release(ptr);
  return s;
}

/** Lift a `string` stored as (ptr, len) at `at`. */
export function liftStringAt(at: usize): string {
  return liftString(load<u32>(at), load<u32>(at, 4));
}

/** Lift an `option<string>` stored as (tag, ptr, len) at `at`. */
export function liftOptionStringAt(at: usize): string | null {
  if (load<u8>(at) == 0) return null;
  return liftStringAt(at + 4);
}

/** Lift a `list<u8>` stored as (ptr, len) at `at`. */
export function liftBytesAt(at: usize): Uint8Array {
  const ptr: usize = load<u32>(at);
  const len: u32 = load<u32>(at, 4);
  const out = new Uint8Array(len);
  memory.copy(out.dataStart, ptr, len);
  release(ptr);
  return out;
}

/**
 * A `list<tuple<string, string>>` being lowered: the element array lives on
 * the heap, the strings in `keep` (managed, alive as long as this is).
 */
export class FieldList {
  ptr: usize = 0;
  len: i32 = 0;
  keep: ArrayBuffer[] = [];

  constructor(names: string[], values: string[]) {
    this.len = names.length;
    if (this.len > 0) this.ptr = heap.alloc(<usize>this.len * 16);
    for (let i = 0; i < this.len; i++) {
      const k = utf8(names[i]);
      const v = utf8(values[i]);
      this.keep.push(k);
      this.keep.push(v);
      const at = this.ptr + <usize>i * 16;
      store<u32>(at, changetype<usize>(k));
      store<u32>(at, k.byteLength, 4);
      store<u32>(at, changetype<usize>(v), 8);
      store<u32>(at, v.byteLength, 12);
    }
  }

  free(): void {
    if (this.ptr != 0) heap.free(this.ptr);
    this.ptr = 0;
  }
}

/** Lift a `list<tuple<string, string>>` stored as (ptr, len) at `at`. */
export function liftFieldsAt(at: usize, names: string[], values: string[]): void {
  const ptr: usize = load<u32>(at);
  const len: u32 = load<u32>(at, 4);
  for (let i: u32 = 0; i < len; i++) {
    const e = ptr + <usize>i * 16;
    names.push(liftString(load<u32>(e), load<u32>(e, 4)));
    values.push(liftString(load<u32>(e, 8), load<u32>(e, 12)));
  }
  release(ptr);
}

/** Lower a string into a fresh heap buffer (for export results). */
export function lowerOwned(s: string, at: usize): void {
  const len = String.UTF8.byteLength(s);
  const ptr = heap.alloc(len);
  String.UTF8.encodeUnsafe(changetype<usize>(s), s.length, ptr);
  store<u32>(at, ptr);
  store<u32>(at, len, 4);
}
