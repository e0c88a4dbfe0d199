/* The native module `_wload`: the imports of `wload:test@0.2.0` for the
 * SDK's Python (py/wload), each a thin C function over src/host.rs,
 * which does the work with the value helpers below. A host function that
 * fails returns MP_OBJ_NULL with its message kept on the Rust side; the
 * exception is raised here, not across Rust frames. */

#include <string.h>

#include "py/objstr.h"
#include "py/objint.h"
#include "py/objmodule.h"
#include "py/runtime.h"

/* ---- values, for src/host.rs (none of these raise) ---- */

mp_obj_t wlc_none(void) { return mp_const_none; }
mp_obj_t wlc_bool(int b) { return mp_obj_new_bool(b); }
mp_obj_t wlc_int(int64_t v) { return mp_obj_new_int_from_ll(v); }
mp_obj_t wlc_uint(uint64_t v) { return mp_obj_new_int_from_ull(v); }
mp_obj_t wlc_float(double v) { return mp_obj_new_float(v); }
mp_obj_t wlc_str(const char *p, size_t n) { return mp_obj_new_str(p, n); }
mp_obj_t wlc_bytes(const uint8_t *p, size_t n) { return mp_obj_new_bytes(p, n); }
mp_obj_t wlc_tuple(size_t n, const mp_obj_t *items) { return mp_obj_new_tuple(n, items); }
mp_obj_t wlc_list(size_t n, mp_obj_t *items) { return mp_obj_new_list(n, items); }

int wlc_is_none(mp_obj_t o) { return o == mp_const_none; }
int wlc_truthy(mp_obj_t o) {
    if (o == mp_const_true) return 1;
    if (o == mp_const_false || o == mp_const_none) return 0;
    if (mp_obj_is_small_int(o)) return MP_OBJ_SMALL_INT_VALUE(o) != 0;
    return 1;
}

/* str, bytes or bytearray: its bytes. */
int wlc_str_data(mp_obj_t o, const char **p, size_t *n) {
    if (mp_obj_is_str_or_bytes(o)) {
        GET_STR_DATA_LEN(o, data, len);
        *p = (const char *)data;
        *n = len;
        return 1;
    }
    if (mp_obj_is_type(o, &mp_type_bytearray)) {
        mp_buffer_info_t info;
        mp_get_buffer(o, &info, MP_BUFFER_READ);
        *p = info.buf;
        *n = info.len;
        return 1;
    }
    return 0;
}

/* An int, a bool or a float as a double. */
int wlc_num(mp_obj_t o, double *out) {
    if (mp_obj_is_small_int(o)) {
        *out = (double)MP_OBJ_SMALL_INT_VALUE(o);
        return 1;
    }
    if (o == mp_const_true || o == mp_const_false) {
        *out = o == mp_const_true;
        return 1;
    }
    if (mp_obj_is_float(o)) {
        *out = mp_obj_float_get(o);
        return 1;
    }
    if (mp_obj_is_int(o)) {
        *out = mp_obj_int_as_float_impl(o);
        return 1;
    }
    return 0;
}

/* A tuple or a list: its items. */
int wlc_seq(mp_obj_t o, size_t *n, mp_obj_t **items) {
    if (mp_obj_is_type(o, &mp_type_tuple) || mp_obj_is_type(o, &mp_type_list)) {
        mp_obj_get_array(o, n, items);
        return 1;
    }
    return 0;
}

/* ---- the module ---- */

/* src/host.rs */
extern mp_obj_t wl_host_call(int op, size_t n, const mp_obj_t *args);
extern void wl_host_error(const char **p, size_t *n, int *kind);

/* `_wload.call(op, *args)`: one entry for every host function keeps this
 * file small; `op` is the index src/host.rs dispatches on. */
static mp_obj_t wload_call(size_t n_args, const mp_obj_t *args) {
    mp_obj_t out = wl_host_call(mp_obj_get_int(args[0]), n_args - 1, args + 1);
    if (out == MP_OBJ_NULL) {
        const char *p;
        size_t n;
        int kind;
        wl_host_error(&p, &n, &kind);
        mp_obj_t text = mp_obj_new_str(p, n);
        const mp_obj_type_t *type = kind == 1 ? &mp_type_ValueError : kind == 2 ? &mp_type_TypeError : &mp_type_RuntimeError;
        nlr_raise(mp_obj_new_exception_arg1(type, text));
    }
    return out;
}
static MP_DEFINE_CONST_FUN_OBJ_VAR_BETWEEN(wload_call_obj, 1, 8, wload_call);

/* `_wload.exec_top(top_level, module)`: run a module's compiled top level
 * with the module's dict as its globals and locals, as import does. */
static mp_obj_t wload_exec_top(mp_obj_t fun, mp_obj_t module) {
    mp_obj_dict_t *globals = mp_obj_module_get_globals(module);
    mp_obj_dict_t *old_globals = mp_globals_get();
    mp_obj_dict_t *old_locals = mp_locals_get();
    mp_globals_set(globals);
    mp_locals_set(globals);
    nlr_buf_t nlr;
    if (nlr_push(&nlr) == 0) {
        mp_call_function_0(fun);
        nlr_pop();
        mp_globals_set(old_globals);
        mp_locals_set(old_locals);
        return mp_const_none;
    }
    mp_globals_set(old_globals);
    mp_locals_set(old_locals);
    nlr_jump(nlr.ret_val);
}
static MP_DEFINE_CONST_FUN_OBJ_2(wload_exec_top_obj, wload_exec_top);

/* `_wload.traceback(exc)`: the traceback as MicroPython prints it (its
 * sys.print_exception writes to stdout only in this build). */
static mp_obj_t wload_traceback(mp_obj_t exc) {
    vstr_t text;
    mp_print_t print;
    vstr_init_print(&text, 256, &print);
    mp_obj_print_exception(&print, exc);
    return mp_obj_new_str_from_vstr(&text);
}
static MP_DEFINE_CONST_FUN_OBJ_1(wload_traceback_obj, wload_traceback);

static const mp_rom_map_elem_t wload_module_globals_table[] = {
    { MP_ROM_QSTR(MP_QSTR_traceback), MP_ROM_PTR(&wload_traceback_obj) },
    { MP_ROM_QSTR(MP_QSTR_exec_top), MP_ROM_PTR(&wload_exec_top_obj) },
    { MP_ROM_QSTR(MP_QSTR___name__), MP_ROM_QSTR(MP_QSTR__wload) },
    { MP_ROM_QSTR(MP_QSTR_call), MP_ROM_PTR(&wload_call_obj) },
};
static MP_DEFINE_CONST_DICT(wload_module_globals, wload_module_globals_table);

const mp_obj_module_t wload_user_cmodule = {
    .base = { &mp_type_module },
    .globals = (mp_obj_dict_t *)&wload_module_globals,
};

MP_REGISTER_MODULE(MP_QSTR__wload, wload_user_cmodule);
