// Handlers for the exec family: the program image is about to be replaced, so the snapshot that
// ends this image's stream is written first (reason exec), and periodic snapshots are held back
// until exec returns, which it does only when it failed. A vfork child, which shares its parent's
// memory, writes nothing (runtime_before_exec() checks the pid).
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>

#include "core/runtime.h"
#include "core/types.h"
#include "interpose/hooks.h"

namespace leakscope::internal {
namespace {

template <typename Call>
int exec_recorded(Call&& call) {
  runtime_before_exec();
  int result = call();
  int saved_errno = errno;
  runtime_exec_failed();
  errno = saved_errno;
  return result;
}

}  // namespace

int handle_execve(const char* path, char* const argv[], char* const envp[]) {
  return exec_recorded([&] { return g_real.execve(path, argv, envp); });
}

int handle_execv(const char* path, char* const argv[]) {
  return exec_recorded([&] { return g_real.execv != nullptr ? g_real.execv(path, argv) : g_real.execve(path, argv, environ); });
}

int handle_execvp(const char* file, char* const argv[]) {
  return exec_recorded([&] { return g_real.execvp(file, argv); });
}

int handle_execvpe(const char* file, char* const argv[], char* const envp[]) {
  return exec_recorded([&] { return g_real.execvpe(file, argv, envp); });
}

int handle_fexecve(int fd, char* const argv[], char* const envp[]) {
  return exec_recorded([&] { return g_real.fexecve(fd, argv, envp); });
}

int handle_execveat(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  return exec_recorded([&] { return g_real.execveat(dirfd, path, argv, envp, flags); });
}

}  // namespace leakscope::internal

using namespace leakscope::internal;

// The variadic forms, over the vector forms above. As glibc does, the list is counted first, then
// copied into an array of exactly that size on the stack; execle's environment follows the list's
// terminating null pointer.
template <typename Exec>
int exec_listed(const char* arg, va_list list, bool environment_follows, Exec&& exec) {
  size_t count = 1;
  va_list counting;
  va_copy(counting, list);
  while (va_arg(counting, const char*) != nullptr) ++count;
  va_end(counting);
  char* argv[count + 1];
  argv[0] = const_cast<char*>(arg);
  for (size_t i = 1; i <= count; ++i) argv[i] = va_arg(list, char*);
  char* const* envp = environment_follows ? va_arg(list, char* const*) : environ;
  return exec(argv, envp);
}

extern "C" __attribute__((visibility("default"))) int execl(const char* path, const char* arg, ...) noexcept {
  va_list list;
  va_start(list, arg);
  int result = exec_listed(arg, list, false, [&](char* const* argv, char* const* envp) { return handle_execve(path, argv, envp); });
  va_end(list);
  return result;
}

extern "C" __attribute__((visibility("default"))) int execlp(const char* file, const char* arg, ...) noexcept {
  va_list list;
  va_start(list, arg);
  int result = exec_listed(arg, list, false, [&](char* const* argv, char* const*) { return handle_execvp(file, argv); });
  va_end(list);
  return result;
}

extern "C" __attribute__((visibility("default"))) int execle(const char* path, const char* arg, ...) noexcept {
  va_list list;
  va_start(list, arg);
  int result = exec_listed(arg, list, true, [&](char* const* argv, char* const* envp) { return handle_execve(path, argv, envp); });
  va_end(list);
  return result;
}
