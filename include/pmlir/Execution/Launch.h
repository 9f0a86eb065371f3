//===- Launch.h - One process per rank through mpirun ----------*- C++ -*-===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#ifndef PMLIR_EXECUTION_LAUNCH_H
#define PMLIR_EXECUTION_LAUNCH_H

#include <cstdint>
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

/// Runs `command` on `ranks` processes of this host through mpirun and
/// returns its exit status; a failure to start is printed and returns 1
/// (127 when mpirun is missing), as are more ranks than kMaxRanksPerCore a
/// core of this host.
int launchRanks(int64_t ranks, const std::vector<std::string> &command);

} // namespace pmlir::exec

#endif // PMLIR_EXECUTION_LAUNCH_H
