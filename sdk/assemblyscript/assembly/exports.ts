// What a test's entry file re-exports (`export * from "wload-as/exports"`):
// the world's exports and the canonical ABI's allocator and post-return
// functions, and nothing else, so the module matches the world exactly.

export {
  options,
  setup,
  functions,
  iteration,
  teardown,
  cabi_realloc,
  cabi_post_options,
  cabi_post_setup,
  cabi_post_functions,
  cabi_post_iteration,
  cabi_post_teardown,
} from "./test";
