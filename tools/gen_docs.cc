// Writes the generated reference pages from the .inc tables, so they cannot drift from the code:
//   leakscope_gen_docs options > docs/options.md
//   leakscope_gen_docs hooks   > docs/hooks.md
// A test (docs_are_current) fails when the committed pages differ from this output.
#include <cstdio>
#include <cstring>

namespace {

void print_options() {
  std::puts("# Runtime options\n");
  std::puts("Set in `LEAKSCOPE_OPTIONS` as `name=value,name=value` (or through `leakscope run`).");
  std::puts("A malformed or unknown option prints one line, `leakscope: tracking disabled: ...`, and the");
  std::puts("program runs untouched. Generated from `src/core/options.inc` by `tools/gen_docs.cc`.\n");
  std::puts("| option | default | meaning |");
  std::puts("|---|---|---|");
#define LS_OPTION(type, name, default_text, doc) std::printf("| `%s` (%s) | `%s` | %s |\n", #name, #type, default_text, doc);
#include "core/options.inc"
#undef LS_OPTION
}

// domain_name() is the DESIGN.md name of a domain as driver_calls.inc spells it.
const char* domain_name(const char* row) {
  if (std::strcmp(row, "Cuda") == 0) return "cuda";
  if (std::strcmp(row, "CudaHost") == 0) return "cuda_host";
  if (std::strcmp(row, "CudaManaged") == 0) return "cuda_managed";
  return row;
}

void print_hooks() {
  std::puts("# Interposed functions\n");
  std::puts("Every function libleakscope.so exports in place of libc's. Required functions must be found");
  std::puts("(`dlsym(RTLD_NEXT)`) or tracking is disabled; optional ones may be absent. Generated from");
  std::puts("`src/interpose/hooks.inc` by `tools/gen_docs.cc`.\n");
  std::puts("| function | domain | need |");
  std::puts("|---|---|---|");
#define LS_HOOK(name, ret, params, args, domain, need, nothrow) \
  std::printf("| `%s %s%s` | %s | %s |\n", #ret, #name, #params, #domain, std::strcmp(#need, "kRequired") == 0 ? "required" : "optional");
#define LS_HOOK_MANUAL LS_HOOK
#include "interpose/hooks.inc"
#undef LS_HOOK_MANUAL
#undef LS_HOOK
  std::puts("\n## CUDA driver calls\n");
  std::puts("With the `cuda` option, the CUDA driver's memory calls are followed through CUPTI's driver-API");
  std::puts("callbacks (not interposed: the CUDA runtime reaches the driver through function pointers), and");
  std::puts("the destruction of a context ends every block made in it. Generated from `src/cuda/driver_calls.inc`.\n");
  std::puts("| driver call | domain | what is recorded |");
  std::puts("|---|---|---|");
#define LS_DRIVER_ALLOC(name, domain, address, size) \
  std::printf("| `%s` | %s | at exit, on success: a block at `%s` of `%s` bytes |\n", #name, domain_name(#domain), #address, #size);
#define LS_DRIVER_FREE(name, address) std::printf("| `%s` | | at entry: the block at `%s` ends |\n", #name, #address);
#define LS_DRIVER_VMM(name, step, doc) std::printf("| `%s` | | %s |\n", #name, doc);
#include "cuda/driver_calls.inc"
#undef LS_DRIVER_ALLOC
#undef LS_DRIVER_FREE
#undef LS_DRIVER_VMM
}

void print_exit_codes() {
  std::puts("| code | meaning |");
  std::puts("|---|---|");
#define LS_EXIT_CODE(name, code, meaning) std::printf("| %d | %s |\n", code, meaning);
#include "../tools/leakscope/exit_codes.inc"
#undef LS_EXIT_CODE
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "options") == 0) {
    print_options();
  } else if (argc == 2 && std::strcmp(argv[1], "hooks") == 0) {
    print_hooks();
  } else if (argc == 2 && std::strcmp(argv[1], "exit-codes") == 0) {
    print_exit_codes();
  } else {
    std::fprintf(stderr, "usage: leakscope_gen_docs options|hooks|exit-codes\n");
    return 2;
  }
  return 0;
}
