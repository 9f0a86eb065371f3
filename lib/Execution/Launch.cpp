//===- Launch.cpp - One process per rank through mpirun -------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Launch.h"

#include "pmlir/Runtime/GemmKernels.h"
#include "pmlir/Support/OutputFile.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace {

/// The mpirun this process waits for, the first signal that asked this
/// process to end, and how many did.
volatile sig_atomic_t mpirunPid = 0;
volatile sig_atomic_t endedBy = 0;
volatile sig_atomic_t endingSignals = 0;
/// Whether the job's ranks stop at a step boundary on SIGUSR1.
volatile sig_atomic_t ranksStopAtStep = 0;

/// The signals a user or a batch scheduler ends a job with.
constexpr int kEndingSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT};

/// Writes `text` to standard error from a signal handler.
void say(const char *text) {
  ssize_t ignored = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)ignored;
}

/// Passes a signal sent to this process on to mpirun, which ends the job's
/// ranks (or, the first time in a training run, asks them to stop with
/// SIGUSR1). A signal from the terminal (Ctrl-C) reaches mpirun and the
/// ranks by their process group already, so it is not sent twice.
void forwardToMpirun(int signal, siginfo_t *info, void *) {
  if (!endedBy)
    endedBy = signal;
  bool asks = ranksStopAtStep && endingSignals == 0 && signal != SIGQUIT;
  endingSignals = endingSignals + 1;
  if (mpirunPid > 0 && info->si_code != SI_KERNEL) {
    if (asks)
      say("pmlir-run: asked to end: the ranks stop after their current step (a second "
          "signal ends them at once)\n");
    kill(mpirunPid, asks ? SIGUSR1 : signal);
  }
}

/// The signal that asked this process to stop at its next step boundary.
volatile sig_atomic_t stopRequestedBy = 0;
/// Whether the first step has begun (stepsBegin): before it, a process
/// alone has no step to finish and ends at the first signal.
volatile sig_atomic_t stepsHaveBegun = 0;
/// The actions the stop handler replaced, restored by a second signal.
constexpr int kStopSignals[] = {SIGUSR1, SIGTERM, SIGINT, SIGHUP};
struct sigaction replacedActions[std::size(kStopSignals)];

void requestStop(int signal) {
  // SIGUSR1 is a launcher's request (or a user's polite one): it always
  // waits for a step boundary.
  bool alone = signal != SIGUSR1;
  if (alone && !stepsHaveBegun && !stopRequestedBy)
    say("pmlir-run: asked to end before the first step: ending now\n");
  if (stopRequestedBy || (alone && !stepsHaveBegun)) {
    // A second signal, or a first with no step to finish: it ends the
    // process as it would have.
    for (size_t i = 0; i < std::size(kStopSignals); ++i)
      sigaction(kStopSignals[i], &replacedActions[i], nullptr);
    raise(signal);
    return;
  }
  stopRequestedBy = signal;
  if (signal != SIGUSR1)
    say("pmlir-run: asked to end: stopping after the current step (a second signal ends the "
        "run at once)\n");
}

} // namespace

void pmlir::exec::catchStopRequests(bool rankOfJob) {
  // Temporaries are removed first by a signal that ends the process.
  removeTemporariesOnEndingSignals();
  struct sigaction action = {};
  action.sa_handler = requestStop;
  sigemptyset(&action.sa_mask);
  // A rank's SIGTERM comes from mpirun ending the job: it ends the rank.
  size_t caught = rankOfJob ? 1 : std::size(kStopSignals);
  for (size_t i = 0; i < caught; ++i) {
    sigaction(kStopSignals[i], nullptr, &replacedActions[i]);
    // An ignored signal stays ignored (nohup).
    if (replacedActions[i].sa_handler != SIG_IGN)
      sigaction(kStopSignals[i], &action, nullptr);
  }
}

int pmlir::exec::stopRequest() { return stopRequestedBy; }

void pmlir::exec::stepsBegin() { stepsHaveBegun = 1; }

bool pmlir::exec::underMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
}

int64_t pmlir::exec::launcherRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoll(value);
  return -1;
}

std::optional<pmlir::exec::HostList> pmlir::exec::readHostfile(const std::string &path,
                                                               std::string &error) {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  if (!file) {
    error = "--hostfile '" + path + "': " + file.getError().message();
    return std::nullopt;
  }
  if ((*file)->getBuffer().contains('\0')) {
    error = "--hostfile '" + path + "' holds a NUL byte: it is no text file of hosts";
    return std::nullopt;
  }
  HostList list;
  int64_t slots = 0;
  bool everyHostCounted = true;
  std::map<std::string, size_t> lineOf;
  llvm::SmallVector<llvm::StringRef> lines;
  (*file)->getBuffer().split(lines, '\n');
  for (auto [index, line] : llvm::enumerate(lines)) {
    llvm::SmallVector<llvm::StringRef> words;
    llvm::SplitString(line.split('#').first, words);
    if (words.empty())
      continue;
    auto where = [&, index = index] {
      return "--hostfile '" + path + "' line " + std::to_string(index + 1) + ": ";
    };
    std::optional<int64_t> hostSlots;
    for (llvm::StringRef word : llvm::ArrayRef(words).drop_front()) {
      auto [key, value] = word.split('=');
      int64_t count = 0;
      if (!word.contains('=')) {
        error = where() + "'" + word.str() +
                "' follows the host name and is no KEY=VALUE (a host name holds no space; "
                "slots=N may follow it)";
        return std::nullopt;
      }
      if (key != "slots" && key != "max_slots")
        continue; // mpirun's to read
      if (value.getAsInteger(10, count) || count <= 0) {
        error = where() + "'" + word.str() + "' is not a positive number of slots";
        return std::nullopt;
      }
      if (key == "slots")
        hostSlots = count;
    }
    if (auto [at, added] = lineOf.emplace(words.front().str(), index + 1); !added) {
      error = where() + "host '" + words.front().str() + "' is named again (first on line " +
              std::to_string(at->second) + "): give it one line, with its slots=N";
      return std::nullopt;
    }
    list.hosts.push_back(words.front().str());
    if (hostSlots)
      slots += *hostSlots;
    else
      everyHostCounted = false;
  }
  if (list.hosts.empty()) {
    error = "--hostfile '" + path + "' names no host";
    return std::nullopt;
  }
  if (everyHostCounted)
    list.slots = slots;
  return list;
}

int pmlir::exec::launchRanks(int64_t ranks, const std::vector<std::string> &command,
                             const std::string &hostfile, bool stopsAtStep) {
  // Every rank is a process of its own on this host, holding its compiled
  // program: past a number of them a core, the host thrashes rather than
  // runs the job.
  int64_t cores = std::max<int64_t>(1, std::thread::hardware_concurrency());
  if (hostfile.empty() && ranks > kMaxRanksPerCore * cores) {
    llvm::WithColor::error(llvm::errs(), "pmlir-run")
        << "the mesh has " << ranks << " ranks, and pmlir-run starts them all on this host of "
        << cores << (cores == 1 ? " core" : " cores") << ": at most " << kMaxRanksPerCore * cores
        << " (" << kMaxRanksPerCore << " a core); or start the ranks with mpirun "
        << "yourself (each runs pmlir-run with the same arguments)\n";
    return 1;
  }
  std::vector<std::string> words = {"mpirun", "-np", std::to_string(ranks), "--bind-to", "none"};
  if (!hostfile.empty()) {
    words.insert(words.end(), {"--hostfile", hostfile});
    // A rank on another host starts with that host's environment.
    for (char **entry = environ; *entry; ++entry) {
      llvm::StringRef name = llvm::StringRef(*entry).split('=').first;
      if ((name.starts_with("PMLIR_") || name.starts_with("OPENBLAS_")) &&
          !rt::isThisCpusGemmChoice(name))
        words.insert(words.end(), {"-x", name.str()});
    }
  } else if (ranks > static_cast<int64_t>(std::thread::hardware_concurrency())) {
    // More ranks than cores: ranks that wait must leave the core to the
    // rank they wait for (the runtime's own waits do so in that case too).
    for (const char *word : {"--oversubscribe", "--mca", "mpi_yield_when_idle", "1"})
      words.push_back(word);
  }
  if (geteuid() == 0)
    words.push_back("--allow-run-as-root");
  words.insert(words.end(), command.begin(), command.end());
  std::vector<char *> cargs;
  for (std::string &w : words)
    cargs.push_back(w.data());
  cargs.push_back(nullptr);
  // The job's temporary files (Open MPI's session directory among them) go
  // in a directory of its own, removed when the job ends: jobs started at
  // once on a host otherwise share Open MPI's top session directory
  // (TMPDIR/ompi.HOST.UID), which one removes when it ends while another
  // makes its own inside ("orte_session_dir failed").
  llvm::SmallString<128> jobTemp;
  if (std::error_code failure = llvm::sys::fs::createUniqueDirectory("pmlir-run", jobTemp)) {
    std::fprintf(stderr,
                 "pmlir-run: error: cannot start mpirun: no temporary directory for the job: %s\n",
                 failure.message().c_str());
    return 1;
  }
  llvm::scope_exit removeJobTemp([&] { llvm::sys::fs::remove_directories(jobTemp); });
  std::string tmpdir = "TMPDIR=" + jobTemp.str().str();
  std::vector<char *> environment;
  for (char **entry = environ; *entry; ++entry)
    if (!llvm::StringRef(*entry).starts_with("TMPDIR="))
      environment.push_back(*entry);
  environment.push_back(tmpdir.data());
  environment.push_back(nullptr);
  // A signal that ends this process ends the job: from the fork on, the
  // ending signals are passed on to mpirun (blocked until its pid is
  // known), and mpirun gets SIGTERM if this process dies without a word
  // (SIGKILL), so that no rank runs on, and writes its outputs, after the
  // caller was told the job ended.
  sigset_t ending, previous;
  sigemptyset(&ending);
  for (int signal : kEndingSignals)
    sigaddset(&ending, signal);
  sigprocmask(SIG_BLOCK, &ending, &previous);
  struct sigaction forward = {}, saved[std::size(kEndingSignals)];
  forward.sa_sigaction = forwardToMpirun;
  forward.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&forward.sa_mask);
  for (size_t i = 0; i < std::size(kEndingSignals); ++i)
    sigaction(kEndingSignals[i], &forward, &saved[i]);
  auto restore = [&] {
    for (size_t i = 0; i < std::size(kEndingSignals); ++i)
      sigaction(kEndingSignals[i], &saved[i], nullptr);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
  };
  pid_t launcher = getpid();
  pid_t child = fork();
  if (child < 0) {
    restore();
    std::fprintf(stderr, "pmlir-run: error: cannot start mpirun: fork failed\n");
    return 1;
  }
  if (child == 0) {
    for (int signal : kEndingSignals)
      std::signal(signal, SIG_DFL);
    sigprocmask(SIG_SETMASK, &previous, nullptr);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() != launcher) // the launcher died before prctl
      std::_Exit(143);
    execvpe("mpirun", cargs.data(), environment.data());
    std::fprintf(stderr, "pmlir-run: error: cannot run mpirun (install openmpi-bin): %s\n",
                 std::strerror(errno));
    std::_Exit(127);
  }
  ranksStopAtStep = stopsAtStep;
  mpirunPid = child;
  sigprocmask(SIG_SETMASK, &previous, nullptr);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  mpirunPid = 0;
  restore();
  if (int signal = endedBy) {
    // Ended as asked, after the job: the caller sees this process end by
    // the signal it sent.
    if (stopsAtStep && endingSignals == 1 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
      std::fprintf(stderr, "pmlir-run: %s: the job's ranks stopped after their current step\n",
                   strsignal(signal));
    else
      std::fprintf(stderr, "pmlir-run: error: %s; the job's ranks were ended\n", strsignal(signal));
    removeJobTemp.release();
    llvm::sys::fs::remove_directories(jobTemp);
    std::signal(signal, SIG_DFL);
    raise(signal);
    return 128 + signal;
  }
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  std::fprintf(stderr, "pmlir-run: error: mpirun ended by signal %d\n", WTERMSIG(status));
  return 1;
}
