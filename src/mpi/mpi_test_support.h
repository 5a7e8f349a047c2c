// Shared by the mpi component's tests (run under mpirun, without
// GoogleTest: every rank must take part in every collective, and a failed
// check on one rank must not stop it from reaching the next one): local
// check records and values every rank can recompute for any rank.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <string>
#include <type_traits>
#include <vector>

#include <mpi.h>

#include "tenferro/base/status.h"
#include "tenferro/mpi/collectives.h"
#include "tenferro/mpi/communicator.h"
#include "tenferro/mpi/sliced_einsum.h"
#include "tenferro/tensor/tensor.h"

namespace tenferro::mpi {

// This rank's failed checks.
struct Checks {
  int rank = 0;
  int failures = 0;

  void check(bool ok, const std::string& what) {
    if (ok) return;
    ++failures;
    std::fprintf(stderr, "rank %d: FAILED: %s\n", rank, what.c_str());
  }
  void check_ok(const Status& s, const std::string& what) { check(s.ok(), what + ": " + s.to_string()); }
  void check_code(const Status& s, ErrorCode code, const std::string& what) {
    check(s.code() == code, what + ": expected " + std::string(to_string(code)) + ", found " + s.to_string());
  }
};

// A value only (rank, index) determines, so every rank can recompute any
// rank's contribution.
inline double value_of(int rank, std::int64_t i) { return std::sin(1.0 + rank * 7.0 + static_cast<double>(i) * 0.37); }

template <class T>
Tensor filled(std::vector<std::int64_t> shape, int rank) {
  Tensor t = Tensor::empty(IntArrayRef(shape), dtype_of<T>).value();
  T* p = static_cast<T*>(t.data());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if constexpr (std::is_same_v<T, std::complex<double>>) {
      p[i] = T(value_of(rank, i), value_of(rank + 100, i));
    } else if constexpr (std::is_integral_v<T>) {
      p[i] = static_cast<T>(std::lround(100.0 * value_of(rank, i)));
    } else {
      p[i] = static_cast<T>(value_of(rank, i));
    }
  }
  return t;
}

template <class T>
double max_diff(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return INFINITY;
  double d = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) d = std::max(d, static_cast<double>(std::abs(a[i] - b[i])));
  return d;
}

// A test program's main: initialises MPI, runs body(checks, a duplicate of
// MPI_COMM_WORLD), sums the failed checks over the ranks and returns 0 only
// when no rank failed (rank 0 prints the total under `title`).
template <class Body>
int run_on_ranks(int argc, char** argv, const char* title, Body body) {
  int provided = 0;
  if (MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) return 2;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  Checks c;
  c.rank = rank;
  std::shared_ptr<Communicator> kept;  // used once more after MPI_Finalize
  {
    Result<std::shared_ptr<Communicator>> comm = Communicator::duplicate(MPI_COMM_WORLD);
    if (!comm.ok()) {
      std::fprintf(stderr, "rank %d: %s\n", rank, comm.status().to_string().c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    c.check((*comm)->rank() == rank && (*comm)->size() == size, "communicator rank and size");
    body(c, *comm);
    kept = *comm;
  }
  int failures = c.failures, total = 0;
  MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) std::printf("%s on %d ranks: %d failed checks\n", title, size, total);
  MPI_Finalize();
  // After MPI_Finalize a collective is a typed error, not MPI's abort.
  Tensor t = Tensor::scalar<double>(1.0).value();
  Checks after;
  after.rank = rank;
  after.check_code(agree(*kept, ok_status()), ErrorCode::kFailedPrecondition, "agree after MPI_Finalize");
  after.check_code(allreduce(*kept, t, ReduceOp::kSum), ErrorCode::kFailedPrecondition, "allreduce after MPI_Finalize");
  after.check_code(node_rank(*kept).status(), ErrorCode::kFailedPrecondition, "node_rank after MPI_Finalize");
  kept.reset();  // skips MPI_Comm_free once MPI is finalised
  return total == 0 && after.failures == 0 ? 0 : 1;
}

}  // namespace tenferro::mpi
