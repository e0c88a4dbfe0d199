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
 * is why MicroPython is built stackless (a Python call adds no C frame).
 *
 * Captures live in one arena: the jmp_bufs of nlr frames nest (a setjmp
 * at depth d makes every deeper one dead), so the capture at depth d
 * starts where the one at d - 1 ended, and a longjmp's dropped frames go
 * after its target's capture. Near the arena's end the interpreter's
 * stack limit is lowered, so that it raises its RuntimeError (maximum
 * recursion depth) before a capture could overflow. */

#define WL_SJLJ_IMPL
#include <setjmp.h>
#include <stddef.h>
#include <string.h>

#include "py/mpstate.h"

__attribute__((import_module("asyncify"), import_name("start_unwind"))) void asyncify_start_unwind(void *buf);
__attribute__((import_module("asyncify"), import_name("stop_unwind"))) void asyncify_stop_unwind(void);
__attribute__((import_module("asyncify"), import_name("start_rewind"))) void asyncify_start_rewind(void *buf);
__attribute__((import_module("asyncify"), import_name("stop_rewind"))) void asyncify_stop_rewind(void);

enum { JMP_FRESH, JMP_CAPTURING, JMP_CAPTURED, JMP_RETURNING };

/* The jmp_buf whose unwind is under way. */
static struct wl_jmp_buf *active;
/* Where longjmp's unwind writes the frames it drops. */
static struct wl_async_buf drop;

/* The captures: 1 MiB, of which a VU touches what its depth needs (a
 * capture is ~250 bytes per level of C-to-Python nesting). */
#define ARENA_SIZE (1024 * 1024)
#define MAX_DEPTH 1024
/* Below this much room, the interpreter's stack limit is lowered. */
#define HEADROOM (96 * 1024)
static uint8_t arena[ARENA_SIZE];
static uint8_t *level_end[MAX_DEPTH];
static size_t saved_stack_limit;
static int limit_lowered;

static void stack_limit_restore(void) {
    if (limit_lowered) {
        MP_STATE_THREAD(stack_limit) = saved_stack_limit;
        limit_lowered = 0;
    }
}

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
    /* This jmp_buf is the top nlr frame's (nlr_push sets it, then calls
     * setjmp): its depth is the length of the chain. */
    unsigned depth = 0;
    for (nlr_buf_t *b = MP_STATE_THREAD(nlr_top); b != NULL && depth < MAX_DEPTH; b = b->prev) {
        depth++;
    }
    depth = depth == 0 ? 0 : depth - 1;
    uint8_t *start = depth == 0 ? arena : level_end[depth - 1];
    if ((size_t)(arena + ARENA_SIZE - start) < HEADROOM || depth >= MAX_DEPTH - 1) {
        /* mp_stack_check raises on the next Python call. */
        if (!limit_lowered) {
            saved_stack_limit = MP_STATE_THREAD(stack_limit);
            limit_lowered = 1;
        }
        MP_STATE_THREAD(stack_limit) = 0;
    } else {
        stack_limit_restore();
    }
    env->state = JMP_CAPTURING;
    env->depth = depth;
    env->data.top = start;
    env->data.end = arena + ARENA_SIZE;
    env->stack_pointer = stack_pointer_get();
    active = env;
    asyncify_start_unwind(&env->data);
    return 0; /* not reached as such: the driver rewinds */
}

__attribute__((noinline)) void wl_longjmp(struct wl_jmp_buf *env, int value) {
    env->state = JMP_RETURNING;
    env->value = value == 0 ? 1 : value;
    active = env;
    drop.top = env->captured_top;
    drop.end = arena + ARENA_SIZE;
    /* Returns, and its caller (instrumented) goes on unwinding. */
    asyncify_start_unwind(&drop);
}

/* The driver, left out of Asyncify's instrumentation (build.sh). */
__attribute__((noinline)) void wl_sjlj_run(void (*fn)(void *), void *arg) {
    for (;;) {
        fn(arg);
        if (active == NULL) {
            stack_limit_restore();
            return;
        }
        asyncify_stop_unwind();
        struct wl_jmp_buf *env = active;
        if (env->state == JMP_CAPTURING) {
            /* Keep where the capture ends: each rewind starts there. */
            env->captured_top = env->data.top;
            level_end[env->depth] = env->data.top;
        } else {
            env->data.top = env->captured_top;
        }
        asyncify_start_rewind(&env->data);
    }
}
