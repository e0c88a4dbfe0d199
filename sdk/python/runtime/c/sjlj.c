/* setjmp/longjmp over Asyncify, after Ruby's wasm/setjmp.c.
 *
 * Why: MicroPython raises exceptions with longjmp (nlr), and wasm can only
 * unwind its own stack with the exception-handling proposal, which the
 * engine's wasmtime is built without (it needs the `gc` feature). So the
 * runtime's .wasm goes through `wasm-opt --asyncify` (build.sh), which
 * lets a function save the wasm stack into memory and later restore it:
 *
 * - setjmp unwinds the stack into its jmp_buf (capturing every frame from
 *   wl_sjlj_run down to it), and the driver at once rewinds it: setjmp
 *   returns 0 with the capture kept.
 * - longjmp unwinds the stack (the frames are dropped), and the driver
 *   rewinds the capture of the jmp_buf: setjmp returns again, `value`.
 *
 * A setjmp costs one unwind and one rewind of the frames above it; that
 * is why MicroPython is built stackless (a Python call adds no C frame). */

#define WL_SJLJ_IMPL
#include <setjmp.h>
#include <stddef.h>
#include <string.h>

__attribute__((import_module("asyncify"), import_name("start_unwind"))) void asyncify_start_unwind(void *buf);
__attribute__((import_module("asyncify"), import_name("stop_unwind"))) void asyncify_stop_unwind(void);
__attribute__((import_module("asyncify"), import_name("start_rewind"))) void asyncify_start_rewind(void *buf);
__attribute__((import_module("asyncify"), import_name("stop_rewind"))) void asyncify_stop_rewind(void);

enum { JMP_FRESH, JMP_CAPTURING, JMP_CAPTURED, JMP_RETURNING };

/* The jmp_buf whose unwind is under way. */
static struct wl_jmp_buf *active;
/* Where longjmp's unwind writes the frames it drops. */
static uint8_t drop_buffer[16384];
static struct wl_async_buf drop = {0};

static uintptr_t stack_pointer_get(void) {
    uintptr_t sp;
    __asm__ volatile(".globaltype __stack_pointer, i32\n"
                     "global.get __stack_pointer\n"
                     "local.set %0\n" : "=r"(sp));
    return sp;
}

static void stack_pointer_set(uintptr_t sp) {
    __asm__ volatile(".globaltype __stack_pointer, i32\n"
                     "local.get %0\n"
                     "global.set __stack_pointer\n" : : "r"(sp));
}

/* Not instrumented by Asyncify (it calls the intrinsics itself): run
 * again from its start on each rewind, hence the states. */
__attribute__((noinline)) int wl_setjmp(struct wl_jmp_buf *env) {
    if (active == env && env->state == JMP_CAPTURING) {
        /* The rewind right after the capture. */
        asyncify_stop_rewind();
        env->state = JMP_CAPTURED;
        active = NULL;
        return 0;
    }
    if (active == env && env->state == JMP_RETURNING) {
        /* The rewind of a longjmp. */
        asyncify_stop_rewind();
        env->state = JMP_CAPTURED;
        active = NULL;
        stack_pointer_set(env->stack_pointer);
        return env->value;
    }
    env->state = JMP_CAPTURING;
    env->data.top = env->buffer;
    env->data.end = env->buffer + sizeof env->buffer;
    env->stack_pointer = stack_pointer_get();
    active = env;
    asyncify_start_unwind(&env->data);
    return 0; /* not reached as such: the driver rewinds */
}

__attribute__((noinline)) void wl_longjmp(struct wl_jmp_buf *env, int value) {
    env->state = JMP_RETURNING;
    env->value = value == 0 ? 1 : value;
    active = env;
    drop.top = drop_buffer;
    drop.end = drop_buffer + sizeof drop_buffer;
    /* Returns, and its caller (instrumented) goes on unwinding. */
    asyncify_start_unwind(&drop);
}

/* The driver, left out of Asyncify's instrumentation (build.sh). */
__attribute__((noinline)) void wl_sjlj_run(void (*fn)(void *), void *arg) {
    for (;;) {
        fn(arg);
        if (active == NULL) {
            return;
        }
        asyncify_stop_unwind();
        struct wl_jmp_buf *env = active;
        if (env->state == JMP_CAPTURING) {
            /* Keep where the capture ends: each rewind starts there. */
            env->captured_top = env->data.top;
        } else {
            env->data.top = env->captured_top;
        }
        asyncify_start_rewind(&env->data);
    }
}
