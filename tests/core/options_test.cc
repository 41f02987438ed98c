#include "core/options.h"

#include <gtest/gtest.h>

#include <csignal>
#include <cstring>
#include <string>

namespace leakscope::internal {
namespace {

Options parsed(const char* text, bool* ok = nullptr, std::string* error = nullptr) {
  Options options;
  options_set_defaults(&options);
  char message[512] = "";
  bool result = options_parse(text, &options, message, sizeof(message));
  if (ok != nullptr) *ok = result;
  if (error != nullptr) *error = message;
  return options;
}

TEST(Options, DefaultsAreTheDocumentedOnes) {
  Options options = parsed(nullptr);
  EXPECT_TRUE(options.enabled);
  EXPECT_STREQ(options.output.text, "leakscope.%p.lsc");
  EXPECT_EQ(options.interval, 1000000000ull);
  EXPECT_EQ(options.depth, 64);
  EXPECT_TRUE(options.follow_fork);
  EXPECT_TRUE(options.follow_exec);
}

TEST(Options, LaterValuesOverrideEarlierOnes) {
  bool ok = false;
  Options options = parsed("depth=8,interval=250ms,depth=12,output=/tmp/a.lsc,follow_fork=0", &ok);
  ASSERT_TRUE(ok);
  EXPECT_EQ(options.depth, 12);
  EXPECT_EQ(options.interval, 250000000ull);
  EXPECT_STREQ(options.output.text, "/tmp/a.lsc");
  EXPECT_FALSE(options.follow_fork);
}

TEST(Options, UnknownOptionIsRejectedByName) {
  bool ok = true;
  std::string error;
  parsed("depth=4,colour=blue", &ok, &error);
  EXPECT_FALSE(ok);
  EXPECT_EQ(error, "LEAKSCOPE_OPTIONS: unknown option 'colour' (help=1 lists them)");
}

TEST(Options, MalformedValuesAreRejected) {
  for (const char* text : {"depth=abc", "interval=5", "interval=3 s", "enabled=yes", "output=", "depth", "depth=0",
                           "depth=129", "interval=1ms"}) {
    bool ok = true;
    parsed(text, &ok);
    EXPECT_FALSE(ok) << text;
  }
}

TEST(Options, DurationsAcceptEveryUnitAndFractions) {
  uint64_t ns = 0;
  EXPECT_TRUE(parse_duration_ns("1.5s", 4, &ns));
  EXPECT_EQ(ns, 1500000000ull);
  EXPECT_TRUE(parse_duration_ns("2m", 2, &ns));
  EXPECT_EQ(ns, 120000000000ull);
  EXPECT_TRUE(parse_duration_ns("10us", 4, &ns));
  EXPECT_EQ(ns, 10000ull);
  EXPECT_FALSE(parse_duration_ns("s", 1, &ns));
}

TEST(Options, SizesAcceptEveryWayOfWritingBinaryMultiples) {
  uint64_t bytes = 0;
  for (const char* text : {"524288", "512K", "512KB", "512KiB"}) {
    ASSERT_TRUE(parse_size_bytes(text, strlen(text), &bytes)) << text;
    EXPECT_EQ(bytes, 512u * 1024) << text;
  }
  EXPECT_TRUE(parse_size_bytes("2GiB", 4, &bytes));
  EXPECT_EQ(bytes, 2ull << 30);
  EXPECT_TRUE(parse_size_bytes("7T", 2, &bytes));
  EXPECT_EQ(bytes, 7ull << 40);
  for (const char* text : {"", "K", "12Kb", "3 MiB", "1.5M", "7P", "17179869184GiB", "16777216TiB"}) {
    EXPECT_FALSE(parse_size_bytes(text, strlen(text), &bytes)) << text;  // the last two overflow 64 bits
  }
}

TEST(Options, FormatRoundTripsThroughTheParser) {
  bool ok = false;
  Options original = parsed("interval=1500ms,depth=7,verbose=1", &ok);
  ASSERT_TRUE(ok);
  char text[8192];
  options_format(original, text, sizeof(text));
  EXPECT_NE(std::string(text).find("interval=1500ms"), std::string::npos) << text;
  Options again = parsed(text, &ok);
  ASSERT_TRUE(ok) << text;
  EXPECT_EQ(again.interval, original.interval);
  EXPECT_EQ(again.depth, 7);
  EXPECT_TRUE(again.verbose);
}

TEST(Options, SignalsAreReadByNameNumberOrRealTimeOffset) {
  bool ok = false;
  EXPECT_EQ(parsed("leak_check_signal=SIGUSR2", &ok).leak_check_signal, SIGUSR2);
  EXPECT_TRUE(ok);
  EXPECT_EQ(parsed("leak_check_signal=USR1", &ok).leak_check_signal, SIGUSR1);
  EXPECT_EQ(parsed("leak_check_signal=12", &ok).leak_check_signal, 12);
  EXPECT_EQ(parsed("stop_signal=SIGRTMIN+3", &ok).stop_signal, SIGRTMIN + 3);
  EXPECT_TRUE(ok);
  EXPECT_EQ(parsed(nullptr).stop_signal, SIGRTMAX - 2);
  EXPECT_EQ(parsed(nullptr).leak_check_signal, 0);
  std::string error;
  for (const char* bad : {"leak_check_signal=SIGKILL", "leak_check_signal=9", "leak_check_signal=SIGNOPE",
                          "stop_signal=SIGRTMAX-99", "stop_signal=0", "stop_signal=32", "stop_signal=33",
                          "leak_check_signal=SIGRTMAX-2"}) {
    parsed(bad, &ok, &error);
    EXPECT_FALSE(ok) << bad;
    EXPECT_FALSE(error.empty()) << bad;
  }
}

TEST(Options, LeakCheckMmapIsAutomaticByDefault) {
  bool ok = false;
  EXPECT_EQ(parsed(nullptr).leak_check_mmap, OptionAutomatic::kAuto);
  EXPECT_EQ(parsed("leak_check_mmap=1", &ok).leak_check_mmap, OptionAutomatic::kOn);
  EXPECT_EQ(parsed("leak_check_mmap=0", &ok).leak_check_mmap, OptionAutomatic::kOff);
  parsed("leak_check_mmap=sometimes", &ok);
  EXPECT_FALSE(ok);
}

TEST(Options, HelpTextListsEveryOption) {
  std::string help = options_help_text();
#define LS_OPTION(type, name, default_text, doc) EXPECT_NE(help.find("  " #name "="), std::string::npos) << #name;
#include "core/options.inc"
#undef LS_OPTION
}

}  // namespace
}  // namespace leakscope::internal
