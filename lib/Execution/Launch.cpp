//===- Launch.cpp - One process per rank through mpirun -------------------===//
//
// Part of pmlir.
//
//===----------------------------------------------------------------------===//

#include "pmlir/Execution/Launch.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

bool pmlir::exec::underMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE");
}

int64_t pmlir::exec::launcherRank() {
  for (const char *name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK"})
    if (const char *value = std::getenv(name))
      return std::atoll(value);
  return -1;
}

int pmlir::exec::launchRanks(int64_t ranks, const std::vector<std::string> &command) {
  std::vector<std::string> words = {"mpirun", "-np", std::to_string(ranks), "--bind-to", "none"};
  // More ranks than cores: ranks that wait must leave the core to the rank
  // they wait for (the runtime's own waits do so in that case too).
  if (ranks > static_cast<int64_t>(std::thread::hardware_concurrency()))
    for (const char *word : {"--oversubscribe", "--mca", "mpi_yield_when_idle", "1"})
      words.push_back(word);
  if (geteuid() == 0)
    words.push_back("--allow-run-as-root");
  words.insert(words.end(), command.begin(), command.end());
  std::vector<char *> cargs;
  for (std::string &w : words)
    cargs.push_back(w.data());
  cargs.push_back(nullptr);
  pid_t child = fork();
  if (child < 0) {
    std::fprintf(stderr, "pmlir-run: error: cannot start mpirun: fork failed\n");
    return 1;
  }
  if (child == 0) {
    execvp("mpirun", cargs.data());
    std::fprintf(stderr, "pmlir-run: error: cannot run mpirun (install openmpi-bin): %s\n",
                 std::strerror(errno));
    std::_Exit(127);
  }
  int status = 0;
  waitpid(child, &status, 0);
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  std::fprintf(stderr, "pmlir-run: error: mpirun ended by signal %d\n", WTERMSIG(status));
  return 1;
}
