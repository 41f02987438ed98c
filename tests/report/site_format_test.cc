// How frames are named in a line of text: a function without its parameter list, and leakscope's
// markers whole.
#include "report/site_format.h"

#include <gtest/gtest.h>

namespace leakscope::report {
namespace {

TEST(FrameName, AFunctionIsNamedWithoutItsParametersAndWithItsLine) {
  SymbolizedFrame frame;
  frame.function = "(anonymous namespace)::parse_record(char const*, unsigned long)";
  frame.file = "/src/steady_leak_ci.c";
  frame.line = 17;
  EXPECT_EQ(frame_name(frame, 60), "parse_record (steady_leak_ci.c:17)");
}

TEST(FrameName, AMarkersWordsInParenthesesAreKept) {
  SymbolizedFrame frame;
  frame.function = "[import; frames in between left out (startup_depth)]";
  EXPECT_EQ(frame_name(frame, 60), "[import; frames in between left out (startup_depth)]");
  EXPECT_EQ(function_text(frame, 100), "[import; frames in between left out (startup_depth)]");
  // Cut to fit, a marker keeps what it stands for: its start.
  EXPECT_EQ(function_text(frame, 20), "[import; frames in …");
}

// A stack of frames named `functions`, innermost first, each at `file` line 10 + its depth.
std::vector<SymbolizedFrame> stack_of(std::initializer_list<const char*> functions, const char* file = "server.c") {
  std::vector<SymbolizedFrame> frames;
  for (const char* function : functions) {
    SymbolizedFrame frame;
    frame.function = function;
    frame.file = file;
    frame.line = 10 + static_cast<int>(frames.size());
    frame.module = "/srv/server";
    frames.push_back(frame);
  }
  return frames;
}

TEST(PartLabels, PartsReachedByDifferentCallersAreNamedByThoseCallers) {
  std::vector<std::string> labels =
      part_labels({stack_of({"open_session", "handle_login", "serve_http", "main"}),
                   stack_of({"open_session", "handle_login", "serve_grpc", "main"}),
                   stack_of({"open_session", "handle_login", "serve_admin_cli", "main"})},
                  60);
  EXPECT_EQ(labels, (std::vector<std::string>{"via serve_http (server.c:12)", "via serve_grpc (server.c:12)",
                                               "via serve_admin_cli (server.c:12)"}));
}

TEST(PartLabels, APartWhoseInnermostFrameIsItsOwnIsNamedByIt) {
  std::vector<std::string> labels = part_labels({stack_of({"grow_list", "keep", "handler_1"}),
                                                 stack_of({"resize", "keep", "handler_1"}),
                                                 stack_of({"resize", "keep", "handler_2"})},
                                                60);
  EXPECT_EQ(labels, (std::vector<std::string>{"at grow_list (server.c:10)", "via handler_1 (server.c:12)",
                                               "via handler_2 (server.c:12)"}));
}

// Two handlers each reached by two transports: the frame past the nearest part's names the
// transport, which two parts share, so every part is named by its innermost frame.
TEST(PartLabels, CallersThatDoNotTellEveryPartApartAreNotShown) {
  std::vector<std::string> labels =
      part_labels({stack_of({"store_put", "handle_orders", "serve_http"}), stack_of({"store_put", "handle_users", "serve_http"}),
                   stack_of({"store_put", "handle_orders", "serve_grpc"}), stack_of({"store_put", "handle_users", "serve_grpc"})},
                  60);
  EXPECT_EQ(labels, std::vector<std::string>(4, "at store_put (server.c:10)"));
}

// A recursion's parts differ by how deep it went: the frame where they part is one every part
// has, nearer the allocation.
TEST(PartLabels, ARecursionsPartsAreNamedByTheirInnermostFrame) {
  std::vector<std::string> labels =
      part_labels({stack_of({"intern", "parse_value", "parse_doc", "parse_value", "main"}),
                   stack_of({"intern", "parse_value", "parse_doc", "parse_value", "parse_doc", "parse_value", "main"})},
                  60);
  EXPECT_EQ(labels, std::vector<std::string>(2, "at intern (server.c:10)"));
}

// A worker started as a thread of its own and through a pool: the pool's path has one frame more,
// and the thread's start is on both.
TEST(PartLabels, AFrameThatAnotherPartPassesThroughTooDoesNotNameAPart) {
  std::vector<std::string> labels =
      part_labels({stack_of({"job_buffer", "worker", "start_thread", "clone"}),
                   stack_of({"job_buffer", "worker", "pool_entry", "start_thread", "clone"})},
                  60);
  EXPECT_EQ(labels, std::vector<std::string>(2, "at job_buffer (server.c:10)"));
}

// Orders over HTTP, users over HTTP and users over gRPC: the orders part's path and the users
// parts' differ at the handler, the users parts' at the transport, which orders has too.
TEST(PartLabels, AnLShapedMatrixOfCallersIsNotShown) {
  std::vector<std::string> labels =
      part_labels({stack_of({"store_put", "handle_orders", "serve_http"}), stack_of({"store_put", "handle_users", "serve_http"}),
                   stack_of({"store_put", "handle_users", "serve_grpc"})},
                  60);
  EXPECT_EQ(labels, std::vector<std::string>(3, "at store_put (server.c:10)"));
}

TEST(PartLabels, AnIndirectRecursionsPartsAreNamedByTheirInnermostFrame) {
  std::vector<std::string> labels =
      part_labels({stack_of({"intern", "parse_value", "parse_array", "parse_value", "parse_doc"}),
                   stack_of({"intern", "parse_value", "parse_doc"})},
                  60);
  EXPECT_EQ(labels, std::vector<std::string>(2, "at intern (server.c:10)"));
}

// One switch calls the same handler from each of its cases: the parts part at the switch's lines.
TEST(PartLabels, PartsThatPartAtOneFunctionsLinesAreNamedByThem) {
  std::vector<std::vector<SymbolizedFrame>> stacks;
  for (int line : {21, 20, 19}) {
    stacks.push_back(stack_of({"tenant_table", "onboard", "main"}));
    stacks.back()[1].line = line;
  }
  EXPECT_EQ(part_labels(stacks, 60), (std::vector<std::string>{"via onboard (server.c:21)", "via onboard (server.c:20)",
                                                              "via onboard (server.c:19)"}));
}

// The other part passes through the same function under another name: a copy the compiler
// specialized, or a lambda inlined into its caller, named without what encloses it.
TEST(PartLabels, AFunctionsCopiesAreOneFunction) {
  EXPECT_EQ(part_labels({stack_of({"row_put", "persist", "handle.constprop.0", "serve_http"}),
                         stack_of({"row_put", "persist", "audit_then_persist", "handle", "serve_grpc"})},
                        60),
            std::vector<std::string>(2, "at row_put (server.c:10)"));
  EXPECT_EQ(part_labels({stack_of({"row_put", "persist", "handle_order::{lambda(Req const&)#1}::operator()", "serve_http"}),
                         stack_of({"row_put", "persist", "audit_then_persist", "operator()", "serve_grpc"})},
                        60),
            std::vector<std::string>(2, "at row_put (server.c:10)"));
}

TEST(FrameName, ANameCutToFitIsCutBetweenCharacters) {
  SymbolizedFrame frame;
  frame.function = "处理客户的订单请求";  // three bytes a character
  std::string cut = function_text(frame, 11);
  EXPECT_EQ(cut, "…单请求") << cut;  // 10 bytes kept would begin inside 订
}

TEST(FrameName, ACallOperatorKeepsItsParentheses) {
  SymbolizedFrame frame;
  frame.function = "main::{lambda(Request const&)#1}::operator()";
  EXPECT_EQ(function_text(frame, 100), "main::{lambda(Request const&)#1}::operator()");
  frame.function = "Handler::operator()(Request const&) const";
  EXPECT_EQ(function_text(frame, 100), "Handler::operator()");
}

// Names cut to fit the line would read alike: no part is named by them.
TEST(PartLabels, CallersThatReadAlikeOnceCutToFitAreNotShown) {
  std::vector<std::string> labels =
      part_labels({stack_of({"decode", "svc::Service<svc::OrdersCodec>::handle_method_with_codec"}),
                   stack_of({"decode", "svc::Service<svc::UsersCodec>::handle_method_with_codec"})},
                  40);
  EXPECT_EQ(labels, std::vector<std::string>(2, "at decode (server.c:10)"));
}

}  // namespace
}  // namespace leakscope::report
