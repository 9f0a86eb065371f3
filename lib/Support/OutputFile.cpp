//===- OutputFile.cpp - Files written whole, without harming the path ----===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Support/OutputFile.h"

#include <atomic>
#include <cerrno>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iterator>
#include <random>
#include <sys/stat.h>
#include <unistd.h>

using namespace pmlir;

namespace {

//===----------------------------------------------------------------------===//
// Temporaries removed on a signal
//===----------------------------------------------------------------------===//

// The temporaries being written, for the handler of the signals that end a
// process (a user's Ctrl-C, a scheduler's or mpirun's SIGTERM): it removes
// them, so that no hidden half-written file stays beside an output, then
// lets the signal do what it did before. Fixed slots, since a handler may
// neither allocate nor lock.
constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};
constexpr size_t kTemporarySlots = 64;
enum SlotState : int { Free, Filling, Live };
struct TemporarySlot {
  std::atomic<int> state{Free};
  char path[PATH_MAX];
};
TemporarySlot temporaries[kTemporarySlots];
struct sigaction previousActions[std::size(kEndingSignals)];

void removeTemporariesAndEnd(int signal) {
  for (TemporarySlot &slot : temporaries)
    if (slot.state.load() == Live)
      ::unlink(slot.path);
  // The signal again, as the process had it before (LLVM's handler, or the
  // default that ends it), once this handler returns.
  for (size_t i = 0; i < std::size(kEndingSignals); ++i)
    if (kEndingSignals[i] == signal)
      sigaction(signal, &previousActions[i], nullptr);
  raise(signal);
}

} // namespace

void pmlir::removeTemporariesOnEndingSignals() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true))
    return;
  struct sigaction action = {};
  action.sa_handler = removeTemporariesAndEnd;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < std::size(kEndingSignals); ++i) {
    sigaction(kEndingSignals[i], nullptr, &previousActions[i]);
    // An ignored signal stays ignored (nohup).
    if (previousActions[i].sa_handler != SIG_IGN)
      sigaction(kEndingSignals[i], &action, nullptr);
  }
}

namespace {

/// Registers `path` for removal on an ending signal; the slot, or -1 when
/// all are taken (the file is then only removed on a clean exit).
int registerTemporary(const std::string &path) {
  if (path.size() >= PATH_MAX)
    return -1;
  removeTemporariesOnEndingSignals();
  for (size_t i = 0; i < kTemporarySlots; ++i) {
    int expected = Free;
    if (temporaries[i].state.compare_exchange_strong(expected, Filling)) {
      std::memcpy(temporaries[i].path, path.c_str(), path.size() + 1);
      temporaries[i].state.store(Live);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregisterTemporary(int slot) {
  if (slot >= 0)
    temporaries[slot].state.store(Free);
}

std::string directoryOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string baseOf(const std::string &path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string quoted(const std::string &path) { return "'" + path + "'"; }

/// Writes all `size` bytes to `fd`; 0, or the errno of the failure.
int writeAll(int fd, const void *data, size_t size) {
  const char *p = static_cast<const char *>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return 0;
}

} // namespace

bool pmlir::resolveOutput(const std::string &path, OutputTarget &target, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = "cannot write " + quoted(path) + ": " + why;
    return false;
  };
  if (path.empty())
    return fail("empty path");
  std::string current = path;
  // Follow the chain of links (as the kernel does, at most 40 of them) to
  // the file that is written; a dangling link's target is created.
  for (int hops = 0;; ++hops) {
    if (hops > 40)
      return fail("too many levels of symbolic links");
    struct stat st;
    if (::lstat(current.c_str(), &st) != 0) {
      if (errno != ENOENT)
        return fail(std::strerror(errno));
      target = OutputTarget{current, false, 0666, false};
      break;
    }
    if (S_ISLNK(st.st_mode)) {
      char link[PATH_MAX];
      ssize_t n = ::readlink(current.c_str(), link, sizeof(link) - 1);
      if (n < 0)
        return fail(std::strerror(errno));
      std::string next(link, static_cast<size_t>(n));
      current = next[0] == '/' ? next : directoryOf(current) + "/" + next;
      continue;
    }
    if (S_ISDIR(st.st_mode))
      return fail("it is a directory");
    target = OutputTarget{current, !S_ISREG(st.st_mode),
                          static_cast<unsigned>(st.st_mode & 07777), true};
    break;
  }
  if (target.inPlace) {
    if (::access(target.path.c_str(), W_OK) != 0)
      return fail(std::strerror(errno));
    return true;
  }
  // The temporary is made and renamed in the target's directory.
  std::string directory = directoryOf(target.path);
  struct stat st;
  if (::stat(directory.c_str(), &st) != 0)
    return fail("directory " + quoted(directory) + " does not exist");
  if (!S_ISDIR(st.st_mode))
    return fail(quoted(directory) + " is not a directory");
  if (::access(directory.c_str(), W_OK | X_OK) != 0)
    return fail("directory " + quoted(directory) + ": " + std::strerror(errno));
  return true;
}

bool pmlir::sameFile(const std::string &a, const std::string &b) {
  struct stat x, y;
  if (::stat(a.c_str(), &x) != 0 || ::stat(b.c_str(), &y) != 0)
    return false;
  return x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

std::unique_ptr<OutputFile> OutputFile::open(const std::string &path, std::string &error) {
  std::unique_ptr<OutputFile> file(new OutputFile());
  file->givenPath = path;
  if (!resolveOutput(path, file->target, error))
    return nullptr;
  if (file->target.inPlace) {
    file->writingTo = file->target.path;
    file->fd = ::open(file->writingTo.c_str(), O_WRONLY | O_CLOEXEC);
    if (file->fd < 0) {
      error = "cannot write " + quoted(path) + ": " + std::strerror(errno);
      return nullptr;
    }
    return file;
  }
  static std::atomic<unsigned> counter{0};
  std::random_device device;
  std::string stem = directoryOf(file->target.path) + "/." + baseOf(file->target.path) + ".";
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string candidate = stem + std::to_string(getpid()) + "-" +
                            std::to_string(counter++) + "-" + std::to_string(device() % 100000) +
                            ".tmp";
    int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
                    file->target.mode);
    if (fd < 0 && errno == EEXIST)
      continue;
    if (fd < 0) {
      error = "cannot write " + quoted(path) + ": " + std::strerror(errno);
      return nullptr;
    }
    // A replaced file keeps its permissions (open's mode is under the umask).
    if (file->target.exists)
      (void)::fchmod(fd, file->target.mode);
    file->fd = fd;
    file->writingTo = candidate;
    file->temporarySlot = registerTemporary(candidate);
    return file;
  }
  error = "cannot write " + quoted(path) + ": no free temporary name beside it";
  return nullptr;
}

OutputFile::~OutputFile() {
  if (fd >= 0)
    ::close(fd);
  if (!committed && !target.inPlace && !writingTo.empty())
    ::unlink(writingTo.c_str());
  unregisterTemporary(temporarySlot);
}

bool OutputFile::write(const void *data, size_t size) {
  if (writeErrno == 0)
    writeErrno = writeAll(fd, data, size);
  return writeErrno == 0;
}

bool OutputFile::finish(std::string &error) {
  if (!finished) {
    finished = true;
    if (writeErrno == 0 && !target.inPlace && ::fsync(fd) != 0)
      writeErrno = errno;
    int closed = ::close(fd);
    fd = -1;
    if (writeErrno == 0 && closed != 0)
      writeErrno = errno;
  }
  if (writeErrno != 0) {
    error = "cannot write " + quoted(givenPath) + ": " + std::strerror(writeErrno);
    return false;
  }
  return true;
}

bool OutputFile::commit(std::string &error) {
  if (!finished) {
    finished = true;
    int closed = ::close(fd);
    fd = -1;
    if (writeErrno == 0 && closed != 0)
      writeErrno = errno;
  }
  if (writeErrno == 0 && !target.inPlace &&
      std::rename(writingTo.c_str(), target.path.c_str()) != 0)
    writeErrno = errno;
  if (writeErrno == 0) {
    // After the rename: the name is then gone, and a signal before it still
    // finds the temporary.
    unregisterTemporary(temporarySlot);
    temporarySlot = -1;
  }
  if (writeErrno != 0) {
    error = "cannot write " + quoted(givenPath) + ": " + std::strerror(writeErrno);
    return false;
  }
  committed = true;
  return true;
}

bool pmlir::writeOutputFile(const std::string &path, std::string_view contents,
                            std::string &error) {
  if (path == "-") {
    if (int failure = writeAll(STDOUT_FILENO, contents.data(), contents.size())) {
      error = std::string("cannot write to standard output: ") + std::strerror(failure);
      return false;
    }
    return true;
  }
  std::unique_ptr<OutputFile> file = OutputFile::open(path, error);
  if (!file)
    return false;
  file->write(contents);
  return file->commit(error);
}
