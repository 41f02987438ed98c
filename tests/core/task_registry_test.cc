#include "core/task_registry.h"

#include <gtest/gtest.h>

#include <string>

namespace leakscope::internal {
namespace {

TEST(TaskRegistry, NamesPastTheLimitAreOneTaskSoPerRequestNamesStayBounded) {
  ASSERT_TRUE(task_registry_init());
  TaskId first = task_intern("request", 1);
  ASSERT_NE(first, TaskId::kNone);
  EXPECT_EQ(task_intern("request", 1), first);
  for (uint32_t i = 0; i < kMaxTaskNames + 100; ++i) task_intern(("req-" + std::to_string(i)).c_str(), i);
  TaskId late = task_intern("req-late", 7);
  ASSERT_NE(late, TaskId::kNone);
  EXPECT_STREQ(task_get(late)->name, kOtherTaskNames);
  EXPECT_EQ(task_intern("another-late-name", 0), late);
  EXPECT_EQ(task_intern("request", 1), first) << "names kept before the limit keep their task";
  EXPECT_LE(task_end_id(), kMaxTaskNames + 64 + 2);
}

}  // namespace
}  // namespace leakscope::internal
