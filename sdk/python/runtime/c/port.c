/* The port: what MicroPython's core asks of its platform (print, the
 * files it imports, the collector's roots, a new heap area), and the two
 * entries the Rust side (src/lib.rs) calls: wl_mp_init at
 * pre-initialisation and wl_mp_export for each export of the world.
 *
 * Every entry into the interpreter runs under wl_sjlj_run (sjlj.c), so
 * that an exception's longjmp lands. The collector runs only at the end
 * of an entry (wl_gc_safe_point), where no C frame holds an object: wasm
 * keeps locals out of linear memory, where a scan of the stack would not
 * see them, so a collection in the middle of a call could free what is
 * in use. In between, a full heap grows by a new area instead. */

#include <stdlib.h>
#include <string.h>

#include "py/builtin.h"
#include "py/compile.h"
#include "py/gc.h"
#include "py/lexer.h"
#include "py/mphal.h"
#include "py/mperrno.h"
#include "py/objmodule.h"
#include "py/objstr.h"
#include "py/runtime.h"
#include "py/stackctrl.h"

/* src/lib.rs: the files a test may import (the SDK's and the test's). */
int wl_file_find(const char *path, size_t len, const char **data, size_t *data_len);
/* src/lib.rs: a line for the engine's log (print). */
void wl_print(const char *text, size_t len);

#define WL_HEAP_FIRST (256 * 1024)
/* A collection at the end of an entry once this much was allocated
 * since the last one (in bytes). An idle iteration (GET, check, sleep)
 * allocates about 1.4 KiB and the SDK's live heap is about 16 KiB, so a
 * collection every ~45 such iterations marks little and keeps what a VU
 * writes of its heap to this much plus what lives. */
#define WL_GC_EVERY (64 * 1024)

static int gc_safe;

void gc_collect(void) {
    /* Called by gc_alloc when the heap is full: not here (see above). */
    if (!gc_safe) {
        return;
    }
    gc_collect_start();
    gc_collect_end();
}

size_t gc_get_max_new_split(void) {
    return 64 * 1024 * 1024;
}

static void wl_gc_safe_point(int force) {
    if (force || MP_STATE_MEM(gc_alloc_amount) * MICROPY_BYTES_PER_GC_BLOCK >= WL_GC_EVERY) {
        gc_safe = 1;
        gc_collect();
        gc_safe = 0;
    }
}

void nlr_jump_fail(void *val) {
    (void)val;
    static const char text[] = "MicroPython: an exception escaped every handler";
    wl_print(text, sizeof text - 1);
    abort();
}

/* print(): lines to the engine's log. */
static char line[1024];
static size_t line_len;

mp_uint_t mp_hal_stdout_tx_strn(const char *str, size_t len) {
    for (size_t i = 0; i < len; i++) {
        if (str[i] == '\n' || line_len == sizeof line) {
            wl_print(line, line_len);
            line_len = 0;
            if (str[i] == '\n') {
                continue;
            }
        }
        line[line_len++] = str[i];
    }
    return len;
}

void mp_hal_stdout_tx_strn_cooked(const char *str, size_t len) {
    mp_hal_stdout_tx_strn(str, len);
}

void mp_hal_stdout_tx_str(const char *str) {
    mp_hal_stdout_tx_strn(str, strlen(str));
}

int mp_hal_stdin_rx_chr(void) {
    return -1;
}

/* import: the file table of src/lib.rs. */
mp_import_stat_t mp_import_stat(const char *path) {
    const char *data;
    size_t len;
    switch (wl_file_find(path, strlen(path), &data, &len)) {
        case 1:
            return MP_IMPORT_STAT_FILE;
        case 2:
            return MP_IMPORT_STAT_DIR;
        default:
            return MP_IMPORT_STAT_NO_EXIST;
    }
}

mp_lexer_t *mp_lexer_new_from_file(qstr filename) {
    const char *data;
    size_t len;
    size_t name_len;
    const char *name = (const char *)qstr_data(filename, &name_len);
    if (wl_file_find(name, name_len, &data, &len) != 1) {
        mp_raise_OSError(MP_ENOENT);
    }
    return mp_lexer_new_from_str_len(filename, data, len, 0);
}

mp_obj_t mp_builtin_open(size_t n_args, const mp_obj_t *args, mp_map_t *kwargs) {
    (void)n_args;
    (void)args;
    (void)kwargs;
    mp_raise_msg(&mp_type_OSError, MP_ERROR_TEXT("a wload test has no files: open() is not available"));
}
MP_DEFINE_CONST_FUN_OBJ_KW(mp_builtin_open_obj, 1, mp_builtin_open);

/* ---- entries ---- */

static const char *result_text;
static size_t result_len;
static int result_status;

static void set_result_str(mp_obj_t s) {
    if (s == mp_const_none) {
        result_text = NULL;
        result_len = 0;
        return;
    }
    if (!mp_obj_is_str(s)) {
        s = mp_obj_str_make_new(&mp_type_str, 1, 0, &s);
    }
    /* Kept alive by the module global below until the next entry. */
    mp_store_global(MP_QSTR__wload_result, s);
    GET_STR_DATA_LEN(s, data, len);
    result_text = (const char *)data;
    result_len = len;
}

/* The exception as the SDK's _export.error_text words it, or its type's
 * name when that fails too. */
static void set_result_exception(mp_obj_t exc) {
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_obj_t export = mp_import_name(qstr_from_str("wload._export"), mp_const_none, MP_OBJ_NEW_SMALL_INT(0));
        export = mp_load_attr(export, MP_QSTR__export);
        mp_obj_t fn = mp_load_attr(export, MP_QSTR_error_text);
        set_result_str(mp_call_function_1(fn, exc));
        nlr_pop();
    } else {
        /* The traceback as MicroPython prints it (in the heap: read
         * before wl_mp_gc). */
        static vstr_t text;
        mp_print_t print;
        vstr_init_print(&text, 256, &print);
        mp_obj_print_exception(&print, exc);
        result_text = text.buf;
        result_len = text.len;
    }
}

struct init_args {
    const char *path;
    size_t path_len;
    const char *name;
    size_t name_len;
};

static char stack_top_marker;

static void do_init(void *p) {
    struct init_args *a = p;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        /* Import the SDK (its top level runs here, in the snapshot). */
        mp_obj_t pkg = mp_import_name(qstr_from_str("wload._export"), mp_const_none, MP_OBJ_NEW_SMALL_INT(0));
        mp_obj_t export = mp_load_attr(pkg, MP_QSTR__export);
        /* The test as a module whose top level is compiled, not run: each
         * VU runs it on the engine's first call. */
        qstr name = qstr_from_strn(a->name, a->name_len);
        qstr path = qstr_from_strn(a->path, a->path_len);
        mp_obj_t module = mp_obj_new_module(name);
        mp_obj_dict_t *globals = mp_obj_module_get_globals(module);
        mp_obj_dict_store(MP_OBJ_FROM_PTR(globals), MP_OBJ_NEW_QSTR(MP_QSTR___file__), MP_OBJ_NEW_QSTR(path));
        const char *data;
        size_t len;
        if (wl_file_find(a->path, a->path_len, &data, &len) != 1) {
            mp_raise_msg(&mp_type_OSError, MP_ERROR_TEXT("the test file was not given"));
        }
        mp_lexer_t *lex = mp_lexer_new_from_str_len(path, data, len, 0);
        mp_parse_tree_t tree = mp_parse(lex, MP_PARSE_FILE_INPUT);
        mp_obj_dict_t *old = mp_globals_get();
        mp_globals_set(globals);
        mp_obj_t fun = mp_compile(&tree, path, false);
        mp_globals_set(old);
        mp_call_function_2(mp_load_attr(export, MP_QSTR_prepare), module, fun);
        nlr_pop();
        result_status = 0;
    } else {
        set_result_exception(MP_OBJ_FROM_PTR(nlr.ret_val));
        result_status = 1;
    }
}

/* Pre-initialisation: start the interpreter, import the SDK, compile the
 * test. 0 when done, else 1 and the reason in wl_mp_result. */
int wl_mp_init(const char *path, size_t path_len, const char *name, size_t name_len) {
    mp_stack_set_top(&stack_top_marker);
    mp_stack_set_limit(160 * 1024);
    void *heap = malloc(WL_HEAP_FIRST);
    if (heap == NULL) {
        return 1;
    }
    gc_init(heap, (char *)heap + WL_HEAP_FIRST);
    /* Collections only where wl_gc_safe_point says. */
    MP_STATE_MEM(gc_alloc_threshold) = (size_t)-1;
    mp_init();
    mp_obj_list_append(mp_sys_path, MP_OBJ_NEW_QSTR(MP_QSTR_));
    struct init_args a = {path, path_len, name, name_len};
    wl_sjlj_run(do_init, &a);
    /* What start-up and the SDK left unreachable is freed in the snapshot. */
    wl_gc_safe_point(1);
    return result_status;
}

struct export_args {
    int which;
    uint32_t arg;
};

static const qstr export_names[] = {
    MP_QSTR_options, MP_QSTR_setup, MP_QSTR_functions, MP_QSTR_iteration, MP_QSTR_teardown,
};

static void do_export(void *p) {
    struct export_args *a = p;
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_obj_t pkg = mp_import_name(qstr_from_str("wload._export"), mp_const_none, MP_OBJ_NEW_SMALL_INT(0));
        mp_obj_t export = mp_load_attr(pkg, MP_QSTR__export);
        mp_obj_t fn = mp_load_attr(export, export_names[a->which]);
        mp_obj_t out = a->which == 3 ? mp_call_function_1(fn, mp_obj_new_int_from_uint(a->arg)) : mp_call_function_0(fn);
        set_result_str(out);
        nlr_pop();
        result_status = 0;
    } else {
        set_result_exception(MP_OBJ_FROM_PTR(nlr.ret_val));
        result_status = 1;
    }
}

/* An export: 0 options, 1 setup, 2 functions, 3 iteration(arg), 4
 * teardown. 0 when it returned (its text, NULL for None), 1 when it
 * raised (the reason). The text lives until wl_mp_gc. */
int wl_mp_export(int which, uint32_t arg, const char **out, size_t *out_len) {
    if (which < 0 || which > 4) {
        return 1;
    }
    struct export_args a = {which, arg};
    wl_sjlj_run(do_export, &a);
    *out = result_text;
    *out_len = result_len;
    return result_status;
}

/* After the Rust side copied an entry's text: a collection, if due. */
void wl_mp_gc(void) {
    wl_gc_safe_point(0);
}

/* The result of wl_mp_init. */
void wl_mp_result(const char **out, size_t *out_len) {
    *out = result_text;
    *out_len = result_len;
}
