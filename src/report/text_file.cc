#include "report/text_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace leakscope::report {

bool read_text_file(const std::string& path, std::string* text, std::string* why) {
  // Non-blocking: a FIFO named by mistake must not wait for a writer.
  int descriptor = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (descriptor < 0) {
    *why = std::strerror(errno);
    return false;
  }
  struct stat status {};
  if (fstat(descriptor, &status) != 0 || !S_ISREG(status.st_mode)) {
    *why = S_ISDIR(status.st_mode) ? "a directory, not a file" : "not a regular file (a pipe or a device)";
    close(descriptor);
    return false;
  }
  text->clear();
  char buffer[1 << 16];
  for (;;) {
    ssize_t got = read(descriptor, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      *why = std::strerror(errno);
      close(descriptor);
      return false;
    }
    if (got == 0) break;
    text->append(buffer, static_cast<size_t>(got));
  }
  close(descriptor);
  return true;
}

}  // namespace leakscope::report
