//===- HostfileTest.cpp - Open MPI host files read before a launch ---------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Launch.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace pmlir::exec;

namespace {

/// `text` as a host file; the path.
std::string hostfile(const std::string &text) {
  std::string path = ::testing::TempDir() + "pmlir-hostfile-" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

/// The error reading `text` gives ("" where it reads).
std::string refusal(const std::string &text) {
  std::string path = hostfile(text), error;
  std::optional<HostList> hosts = readHostfile(path, error);
  std::remove(path.c_str());
  return hosts ? "" : error;
}

TEST(Hostfile, CountsSlotsAndLeavesCommentsOut) {
  std::string path = hostfile("a slots=2\n# b slots=8\nc slots=1 max_slots=4\n\n"), error;
  std::optional<HostList> hosts = readHostfile(path, error);
  std::remove(path.c_str());
  ASSERT_TRUE(hosts) << error;
  EXPECT_EQ(hosts->hosts, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(hosts->slots, 3);
  EXPECT_EQ(refusal("a\nb slots=2\n"), ""); // a host without slots: mpirun counts
}

TEST(Hostfile, RefusesWhatMpirunWouldMisread) {
  EXPECT_NE(refusal("a slots=two\n").find("line 1: 'slots=two' is not a positive number of slots"),
            std::string::npos);
  EXPECT_NE(refusal("# none\n").find("names no host"), std::string::npos);
  // A space in a host name: "local host" was taken as host "local".
  EXPECT_NE(refusal("local host slots=2\n")
                .find("line 1: 'host' follows the host name and is no KEY=VALUE"),
            std::string::npos);
  EXPECT_NE(refusal("a slots=1\nb slots=1\na slots=2\n")
                .find("line 3: host 'a' is named again (first on line 1)"),
            std::string::npos);
  EXPECT_NE(refusal(std::string("a slots=1\n\0b\n", 13)).find("holds a NUL byte"),
            std::string::npos);
}

} // namespace
