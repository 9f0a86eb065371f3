//===- Trace.cpp - Spans of each rank's work as a Chrome trace ------------===//
//
// Part of pmlir.
//
// Each rank keeps its spans in memory while it runs; pmlir_rt_trace_write
// gathers them on rank 0 as JSON text and writes one trace: a process per
// rank (named by its mesh coordinates), with its pipeline work and host
// regions on one track, its communication on another, on a GPU the
// kernels and GEMMs its stream ran on a third, and on a CPU its GEMM calls
// on a fourth. Times are in microseconds from the moment the ranks met in
// pmlir_rt_trace_start.
//
//===----------------------------------------------------------------------===//

#include "Trace.h"

#include "pmlir/Runtime/Runtime.h"
#include "pmlir/Runtime/RuntimeAbi.h"
#include "pmlir/Support/OutputFile.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace pmlir::rt;

namespace {

/// The tracks of a rank's process in the trace.
enum Track { Work = 0, Communication = 1, Gpu = 2, Kernels = 3 };

struct Span {
  std::string name;
  std::string category;
  Track track;
  int64_t startNs, endNs;
  std::string args; // JSON members, without braces
};

struct Tracer {
  bool on = false;
  /// The thread that started the trace, whose spans it records.
  std::thread::id thread;
  int64_t originNs = 0;
  std::vector<Span> spans;
  /// Spans begun and not yet ended, innermost last.
  std::vector<size_t> open;
};

Tracer tracer;

int64_t nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string workName(int64_t work) {
  switch (work) {
#define PMLIR_RT_WORK(ENUM, CODE, NAME)                                                            \
  case CODE:                                                                                       \
    return #NAME;
#include "pmlir/Runtime/RuntimeAbi.def"
  }
  return "work " + std::to_string(work);
}

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) < 0x20)
      continue;
    out += c;
  }
  return out + "\"";
}

void begin(std::string name, std::string category, Track track, std::string args) {
  tracer.open.push_back(tracer.spans.size());
  tracer.spans.push_back(
      {std::move(name), std::move(category), track, nowNs(), -1, std::move(args)});
}

void end() {
  if (tracer.open.empty())
    return;
  tracer.spans[tracer.open.back()].endNs = nowNs();
  tracer.open.pop_back();
}

/// This rank's events, as comma-separated JSON objects.
std::string eventsText(int rank) {
  std::string text;
  auto add = [&](const std::string &event) {
    if (!text.empty())
      text += ",\n";
    text += event;
  };
  std::string pid = std::to_string(rank);
  add("{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
      ",\"args\":{\"name\":" + quoted("rank " + pid + " (" + coordinatesText() + ")") + "}}");
  add("{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
      ",\"args\":{\"sort_index\":" + pid + "}}");
  for (auto [track, name] : {std::pair<Track, const char *>{Work, "work"},
                             {Communication, "communication"},
                             {Gpu, "gpu"},
                             {Kernels, "kernels"}})
    add("{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
        ",\"tid\":" + std::to_string(track) + ",\"args\":{\"name\":\"" + name + "\"}}");
  char number[64];
  for (const Span &span : tracer.spans) {
    if (span.endNs < 0)
      continue;
    std::snprintf(number, sizeof(number), "\"ts\":%.3f,\"dur\":%.3f",
                  (span.startNs - tracer.originNs) / 1e3, (span.endNs - span.startNs) / 1e3);
    add("{\"name\":" + quoted(span.name) + ",\"cat\":" + quoted(span.category) +
        ",\"ph\":\"X\",\"pid\":" + pid + ",\"tid\":" + std::to_string(span.track) + "," + number +
        ",\"args\":{" + span.args + "}}");
  }
  return text;
}

} // namespace

bool pmlir::rt::tracing() { return tracer.on; }

int64_t pmlir::rt::traceClockNs() { return nowNs(); }

void pmlir::rt::traceGpuSpan(std::string name, std::string category, int64_t startNs, int64_t endNs,
                             std::string args) {
  if (tracer.on)
    tracer.spans.push_back(
        {std::move(name), std::move(category), Gpu, startNs, endNs, std::move(args)});
}

bool pmlir::rt::tracingThisThread() {
  return tracer.on && std::this_thread::get_id() == tracer.thread;
}

void pmlir::rt::traceKernelSpan(std::string name, std::string category, int64_t startNs,
                                int64_t endNs, std::string args) {
  if (tracingThisThread())
    tracer.spans.push_back(
        {std::move(name), std::move(category), Kernels, startNs, endNs, std::move(args)});
}

TracedCall::TracedCall(const char *what, const Group &group, int64_t bytes, int64_t peer)
    : what(what), group(&group), bytes(bytes), peer(peer) {
  if (tracer.on)
    startNs = nowNs();
}

TracedCall::~TracedCall() {
  if (startNs < 0 || !tracer.on)
    return;
  std::string name = std::string(what) + " " + group->axes;
  std::string args = "\"axes\":" + quoted(group->axes) + ",\"bytes\":" + std::to_string(bytes);
  if (peer >= 0) {
    int64_t world = group->members[static_cast<size_t>(peer)];
    name += (std::strcmp(what, "send") == 0 ? " to rank " : " from rank ") + std::to_string(world);
    args += ",\"peer\":" + std::to_string(world);
  }
  tracer.spans.push_back({name, what, Communication, startNs, nowNs(), args});
}

extern "C" void pmlir_rt_trace_start(void) {
  const Group &all = everyone("trace start");
  {
    Waiting waiting("the start of the trace", all);
    mpiCall(
        "the start of the trace", [&] { return MPI_Barrier(all.comm); },
        [&](MPI_Request *r) { return MPI_Ibarrier(all.comm, r); });
  }
  tracer = Tracer();
  tracer.on = true;
  tracer.thread = std::this_thread::get_id();
  tracer.originNs = nowNs();
}

extern "C" void pmlir_rt_trace_begin(int64_t work, int64_t stage, int64_t microbatch) {
  if (!tracer.on)
    return;
  std::string kind = workName(work);
  begin(kind + std::to_string(microbatch) + " stage " + std::to_string(stage), kind, Work,
        "\"stage\":" + std::to_string(stage) + ",\"microbatch\":" + std::to_string(microbatch));
}

extern "C" void pmlir_rt_trace_end(int64_t, int64_t, int64_t) {
  if (tracer.on)
    end();
}

extern "C" void pmlir_rt_trace_region_begin(const char *name) {
  if (tracer.on)
    begin(name, "host", Work, "");
}

extern "C" void pmlir_rt_trace_region_end(void) {
  if (tracer.on)
    end();
}

extern "C" int pmlir_rt_trace_write(const char *path, char *error, size_t errorSize) {
  const Group &all = everyone("trace write");
  int rank = static_cast<int>(pmlir_rt_rank());
  std::string mine = eventsText(rank);
  tracer.on = false;
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(rank == 0 ? all.size : 0);
  {
    Waiting waiting("gathering the trace", all);
    mpiCall(
        "gathering the trace",
        [&] { return MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, all.comm); },
        [&](MPI_Request *r) {
          return MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, all.comm, r);
        });
  }
  std::vector<int> offsets(lengths.size());
  int total = 0;
  for (size_t i = 0; i < lengths.size(); ++i) {
    offsets[i] = total;
    total += lengths[i];
  }
  std::string everything(static_cast<size_t>(total), '\0');
  {
    Waiting waiting("gathering the trace", all);
    mpiCall(
        "gathering the trace",
        [&] {
          return MPI_Gatherv(mine.data(), length, MPI_CHAR, everything.data(), lengths.data(),
                             offsets.data(), MPI_CHAR, 0, all.comm);
        },
        [&](MPI_Request *r) {
          return MPI_Igatherv(mine.data(), length, MPI_CHAR, everything.data(), lengths.data(),
                              offsets.data(), MPI_CHAR, 0, all.comm, r);
        });
  }
  if (rank != 0)
    return 0;
  std::string json = "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  for (size_t i = 0; i < lengths.size(); ++i) {
    if (i)
      json += ",\n";
    json.append(everything, static_cast<size_t>(offsets[i]), static_cast<size_t>(lengths[i]));
  }
  json += "\n]}\n";
  std::string message;
  if (!pmlir::writeOutputFile(path, json, message)) {
    std::snprintf(error, errorSize, "%s", message.c_str());
    return 1;
  }
  return 0;
}
