/* setjmp/longjmp for MicroPython's NLR (exceptions), over Binaryen's
 * Asyncify in place of wasm exception handling, which the engine's
 * wasmtime is built without (sjlj.c says how). Found before wasi-libc's
 * own <setjmp.h>, which needs exception handling. */
#ifndef WL_SETJMP_H
#define WL_SETJMP_H
#include <stdint.h>

/* Asyncify's data: where the next frame goes, and the end. */
struct wl_async_buf {
    void *top;
    void *end;
};

/* The frames a setjmp captures live in an arena of sjlj.c, not here: a
 * jmp_buf is on the C stack in every nlr frame, and the capture grows
 * with the depth of the stack (a few hundred bytes per C frame). */
typedef struct wl_jmp_buf {
    struct wl_async_buf data;
    void *captured_top;
    uintptr_t stack_pointer;
    unsigned depth;
    int state;
    int value;
} jmp_buf[1];

int wl_setjmp(struct wl_jmp_buf *env);
/* noreturn for its callers; sjlj.c compiles it as returning, since it
 * returns (unwinding) into them under Asyncify. */
#ifdef WL_SJLJ_IMPL
void wl_longjmp(struct wl_jmp_buf *env, int value);
#else
__attribute__((noreturn)) void wl_longjmp(struct wl_jmp_buf *env, int value);
#endif

#define setjmp(env) wl_setjmp(env)
#define longjmp(env, value) wl_longjmp(env, value)

/* Run fn(arg) under the driver that turns unwinds into setjmp returns.
 * Every entry into MicroPython goes through it. */
void wl_sjlj_run(void (*fn)(void *), void *arg);
#endif
