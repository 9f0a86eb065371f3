//===- OutputFile.h - Files written whole, without harming the path ------===//
//
// Part of pmlir.
//
// Every file pmlir writes (programs, results, reports, checkpoints) goes
// through OutputFile. A regular file, or a path that does not exist yet, is
// written to a temporary file made with O_EXCL in the same directory and
// renamed over the path on commit(): a failing run leaves no partial file and
// an existing file untouched. Anything else is written in place, because a
// rename would replace it: a character device (`-o /dev/null` run as root
// must not turn /dev/null into a regular file), a FIFO, a socket. A symbolic
// link is followed, and its final target gets the same treatment, so the
// link stays a link. A process ended by SIGTERM, SIGINT, SIGHUP or SIGQUIT
// removes the temporaries it was writing before the signal takes its
// course. Plain C++: the runtime links it too.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_SUPPORT_OUTPUTFILE_H
#define PMLIR_SUPPORT_OUTPUTFILE_H

#include <memory>
#include <string>
#include <string_view>

namespace pmlir {

/// Where the bytes for an output path go.
struct OutputTarget {
  /// The path after following symbolic links: what is replaced or written.
  std::string path;
  /// Written in place (not a regular file: a device, FIFO or socket).
  bool inPlace = false;
  /// The mode an existing regular file has, for the file replacing it.
  unsigned mode = 0666;
  bool exists = false;
};

/// Resolves `path` (symbolic links followed) and checks that it can be
/// written: its directory exists and is writable, and it is not a
/// directory. Returns false with a sentence naming the path in `error`.
bool resolveOutput(const std::string &path, OutputTarget &target, std::string &error);

/// Whether `a` and `b` name the same existing file (after links).
bool sameFile(const std::string &a, const std::string &b);

class OutputFile {
public:
  /// Opens `path` for writing as described above; null with `error` set
  /// (naming the path) on failure.
  static std::unique_ptr<OutputFile> open(const std::string &path, std::string &error);
  /// Without commit(), removes the temporary file: the path is untouched.
  ~OutputFile();
  OutputFile(const OutputFile &) = delete;
  OutputFile &operator=(const OutputFile &) = delete;

  /// Appends `size` bytes; false (with the reason kept for commit) on error.
  bool write(const void *data, size_t size);
  bool write(std::string_view text) { return write(text.data(), text.size()); }
  /// Closes the file, its bytes on the disk (fsync), not yet at the path:
  /// what must be complete before any of several files is committed (a
  /// checkpoint's). Returns false with `error` set if any write or this
  /// failed; the temporary is then removed when this object goes.
  bool finish(std::string &error);
  /// Closes the file (unless finished) and renames the temporary over the
  /// target. Returns false with `error` set if any write or this failed.
  bool commit(std::string &error);

  /// The file the bytes go to now: the temporary, or the target in place.
  const std::string &writePath() const { return writingTo; }
  /// The path as the user gave it.
  const std::string &path() const { return givenPath; }
  int descriptor() const { return fd; }

private:
  OutputFile() = default;
  std::string givenPath, writingTo;
  OutputTarget target;
  int fd = -1;
  int writeErrno = 0;
  bool committed = false;
  bool finished = false;
  /// Its slot among the temporaries removed on an ending signal, or -1.
  int temporarySlot = -1;
};

/// Installs, once, the handlers of the signals that end a process
/// (SIGTERM, SIGINT, SIGHUP, SIGQUIT) that remove the temporaries being
/// written, then let the signal act as it did before. An OutputFile does
/// it when it opens; a handler installed after this one that lets a signal
/// end the process restores the action it replaced, so that temporaries
/// go first.
void removeTemporariesOnEndingSignals();

/// Writes `contents` to `path` through an OutputFile ("-": standard output).
bool writeOutputFile(const std::string &path, std::string_view contents, std::string &error);

} // namespace pmlir

#endif // PMLIR_SUPPORT_OUTPUTFILE_H
