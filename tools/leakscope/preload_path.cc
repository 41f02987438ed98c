#include <unistd.h>

#include <filesystem>

#include "cli.h"

namespace leakscope::cli {

std::string preload_path() {
  std::error_code error;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return {};
  std::filesystem::path bin = self.parent_path();
  for (const std::filesystem::path& candidate :
       {bin / LEAKSCOPE_LIB_FROM_BIN / "libleakscope.so", bin / ".." / "lib" / "libleakscope.so"}) {
    if (access(candidate.c_str(), R_OK) == 0) return std::filesystem::weakly_canonical(candidate, error).string();
  }
  return {};
}

}  // namespace leakscope::cli
