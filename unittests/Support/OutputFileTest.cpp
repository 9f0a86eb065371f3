//===- OutputFileTest.cpp - Outputs that never replace what they must not -===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/OutputFile.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace pmlir;

namespace {

/// A fresh scratch directory, removed with its files.
struct ScratchDir {
  std::string path;
  ScratchDir() {
    std::string pattern = ::testing::TempDir() + "pmlir-out-XXXXXX";
    path = mkdtemp(pattern.data());
  }
  ~ScratchDir() {
    for (const std::string &name : entries())
      std::remove((path + "/" + name).c_str());
    ::rmdir(path.c_str());
  }
  std::string operator/(const std::string &name) const { return path + "/" + name; }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    DIR *dir = opendir(path.c_str());
    while (dirent *e = readdir(dir))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    closedir(dir);
    return names;
  }
};

std::string readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

mode_t modeOf(const std::string &path, bool follow = false) {
  struct stat st;
  EXPECT_EQ((follow ? ::stat : ::lstat)(path.c_str(), &st), 0) << path;
  return st.st_mode;
}

} // namespace

TEST(OutputFile, NewAndExistingRegularFilesAreReplacedWhole) {
  ScratchDir dir;
  std::string error;
  ASSERT_TRUE(writeOutputFile(dir / "new.txt", "one", error)) << error;
  EXPECT_EQ(readFile(dir / "new.txt"), "one");
  ::chmod((dir / "new.txt").c_str(), 0640);
  ASSERT_TRUE(writeOutputFile(dir / "new.txt", "two", error)) << error;
  EXPECT_EQ(readFile(dir / "new.txt"), "two");
  EXPECT_EQ(modeOf(dir / "new.txt") & 0777, 0640u) << "the replacement keeps the mode";
  EXPECT_EQ(dir.entries().size(), 1u) << "no temporary file is left";
}

TEST(OutputFile, WithoutCommitThePathIsUntouched) {
  ScratchDir dir;
  std::string error;
  ASSERT_TRUE(writeOutputFile(dir / "kept.txt", "original", error)) << error;
  {
    auto file = OutputFile::open(dir / "kept.txt", error);
    ASSERT_TRUE(file) << error;
    EXPECT_NE(file->writePath(), dir / "kept.txt");
    file->write("partial");
  }
  EXPECT_EQ(readFile(dir / "kept.txt"), "original");
  EXPECT_EQ(dir.entries().size(), 1u);
}

TEST(OutputFile, SymbolicLinksStayLinksAndTheirTargetIsWritten) {
  ScratchDir dir;
  std::string error;
  ASSERT_TRUE(writeOutputFile(dir / "target.txt", "old", error)) << error;
  ASSERT_EQ(::symlink("target.txt", (dir / "link.txt").c_str()), 0);
  ASSERT_TRUE(writeOutputFile(dir / "link.txt", "new", error)) << error;
  EXPECT_TRUE(S_ISLNK(modeOf(dir / "link.txt")));
  EXPECT_EQ(readFile(dir / "target.txt"), "new");
  // A dangling link: its target is created.
  ASSERT_EQ(::symlink("later.txt", (dir / "dangling.txt").c_str()), 0);
  ASSERT_TRUE(writeOutputFile(dir / "dangling.txt", "made", error)) << error;
  EXPECT_TRUE(S_ISLNK(modeOf(dir / "dangling.txt")));
  EXPECT_EQ(readFile(dir / "later.txt"), "made");
  // A loop of links is an error, not a hang.
  ASSERT_EQ(::symlink("loop-b", (dir / "loop-a").c_str()), 0);
  ASSERT_EQ(::symlink("loop-a", (dir / "loop-b").c_str()), 0);
  EXPECT_FALSE(writeOutputFile(dir / "loop-a", "x", error));
  EXPECT_NE(error.find("too many levels of symbolic links"), std::string::npos) << error;
}

TEST(OutputFile, FifosAndDevicesAreWrittenInPlace) {
  ScratchDir dir;
  std::string fifo = dir / "pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string received;
  std::thread reader([&] { received = readFile(fifo); });
  std::string error;
  EXPECT_TRUE(writeOutputFile(fifo, "through the pipe", error)) << error;
  reader.join();
  EXPECT_EQ(received, "through the pipe");
  EXPECT_TRUE(S_ISFIFO(modeOf(fifo)));

  ASSERT_TRUE(writeOutputFile("/dev/null", "discarded", error)) << error;
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/null")));
  // /dev/full takes no bytes: an error, and the device stays.
  EXPECT_FALSE(writeOutputFile("/dev/full", "too much", error));
  EXPECT_NE(error.find("No space left on device"), std::string::npos) << error;
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/full")));
  // /dev/null through a link: the link stays, the device too.
  ASSERT_EQ(::symlink("/dev/null", (dir / "null-link").c_str()), 0);
  ASSERT_TRUE(writeOutputFile(dir / "null-link", "x", error)) << error;
  EXPECT_TRUE(S_ISLNK(modeOf(dir / "null-link")));
  EXPECT_TRUE(S_ISCHR(modeOf("/dev/null")));
}

TEST(OutputFile, UnwritablePathsAreRefusedBeforeAnyWrite) {
  ScratchDir dir;
  OutputTarget target;
  std::string error;
  EXPECT_FALSE(resolveOutput(dir / "missing/out.txt", target, error));
  EXPECT_EQ(error, "cannot write '" + (dir / "missing/out.txt") + "': directory '" +
                       (dir / "missing") + "' does not exist");
  EXPECT_FALSE(resolveOutput(dir.path, target, error));
  EXPECT_NE(error.find("it is a directory"), std::string::npos) << error;
  EXPECT_FALSE(resolveOutput("", target, error));
  ASSERT_TRUE(resolveOutput(dir / "fresh.txt", target, error)) << error;
  EXPECT_FALSE(target.exists);
  EXPECT_FALSE(target.inPlace);
}

TEST(OutputFile, SameFileComparesWhatPathsNameAfterLinks) {
  ScratchDir dir;
  std::string error;
  ASSERT_TRUE(writeOutputFile(dir / "a", "a", error)) << error;
  ASSERT_EQ(::symlink("a", (dir / "to-a").c_str()), 0);
  EXPECT_TRUE(sameFile(dir / "a", dir / "to-a"));
  EXPECT_TRUE(sameFile(dir / "a", dir.path + "/./a"));
  EXPECT_FALSE(sameFile(dir / "a", dir / "missing"));
  ASSERT_TRUE(writeOutputFile(dir / "b", "b", error)) << error;
  EXPECT_FALSE(sameFile(dir / "a", dir / "b"));
}
