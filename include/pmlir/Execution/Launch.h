//===- Launch.h - One process per rank through mpirun ----------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_LAUNCH_H
#define PMLIR_EXECUTION_LAUNCH_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pmlir::exec {

/// Whether this process is a rank that mpirun (or another PMI launcher)
/// started.
bool underMpirun();

/// This process' rank in the job that mpirun started, or -1.
int64_t launcherRank();

/// The most ranks pmlir-run starts on its own host, a core.
inline constexpr int64_t kMaxRanksPerCore = 64;

/// The hosts of an Open MPI host file and the ranks they hold.
struct HostList {
  std::vector<std::string> hosts;
  /// The slots of all hosts together; nullopt where a host names none
  /// (mpirun then counts that host's cores).
  std::optional<int64_t> slots;
};

/// Reads an Open MPI host file: a host a line ("NAME [slots=N]
/// [max_slots=N]"), '#' starting a comment. Nullopt, with `error` naming
/// the file and the line, for a file that cannot be read, holds a NUL byte
/// or no host, names a host twice, has a word after a host that is no
/// KEY=VALUE (a space in a host name), or gives a slot count that is not a
/// positive integer.
std::optional<HostList> readHostfile(const std::string &path, std::string &error);

/// Runs `command` on `ranks` processes through mpirun and returns its exit
/// status; a failure to start is printed and returns 1 (127 when mpirun is
/// missing). Without `hostfile` the ranks run on this host, at most
/// kMaxRanksPerCore a core of it. With one, mpirun places them on its hosts
/// (the caller checked they hold them: readHostfile) and enters the other
/// hosts by its rsh agent (ssh unless OMPI_MCA_plm_rsh_agent names
/// another), which starts them with that host's environment: the variables
/// pmlir's ranks read (PMLIR_*, OPENBLAS_*) are passed on by mpirun, less
/// the GEMM kernels chosen for this host's CPU, which every host chooses
/// for its own.
///
/// A signal that ends this process (SIGTERM, SIGINT, SIGHUP, SIGQUIT) ends
/// the job: it is passed on to mpirun, which ends every rank, and this
/// process ends by it after them. Where `stopsAtStep` (a training run),
/// the first such signal asks instead: it is passed on as SIGUSR1, which
/// mpirun forwards to every rank and the ranks take as a stop request
/// (catchStopRequests), and this process ends by the signal once they have
/// stopped; a second signal ends them at once.
int launchRanks(int64_t ranks, const std::vector<std::string> &command,
                const std::string &hostfile = "", bool stopsAtStep = false);

/// Lets the signals that ask a training run to stop set a request that
/// stopRequest() reads, instead of ending the process, so that it stops at
/// its next step boundary: SIGUSR1 (a launcher's request, passed on by
/// mpirun) and, on a process that runs alone, also SIGTERM, SIGINT and
/// SIGHUP. A second ending signal ends the process as the first would have
/// (its temporaries removed), and so does the first one on a process alone
/// before stepsBegin (compiling, binding: no step to finish).
void catchStopRequests(bool rankOfJob);

/// The first step begins: from here a process alone stops at a step
/// boundary when asked.
void stepsBegin();

/// The signal that asked this process to stop, or 0.
int stopRequest();

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_LAUNCH_H
