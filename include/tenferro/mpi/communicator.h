// Communicator: the MPI communication resource tenferro uses on one rank
// (seed "MPI and Multi-Process Compatibility"). The application owns MPI:
// it calls MPI_Init (or MPI_Init_thread) and MPI_Finalize, places ranks and
// creates one Runtime per rank; tenferro never initialises MPI and keeps no
// process-global state. A Communicator duplicates the application's
// communicator, so tenferro's messages can never match the application's
// (or another Communicator's) receives, and returns MPI errors as codes
// (MPI_ERRORS_RETURN) that collectives translate into typed errors.
//
// Note [MPI threads]
// tenferro calls MPI only from the thread that calls a collective (never
// from an executor's workers), so MPI_THREAD_FUNNELED is enough when the
// application calls collectives from its main thread; calling them from
// several threads at once needs MPI_THREAD_MULTIPLE and one Communicator
// per thread.
#pragma once

#include <memory>
#include <string_view>

// The C API only: Open MPI's and MPICH's deprecated C++ bindings warn under
// -Wall -Wextra.
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include "tenferro/base/status.h"

namespace tenferro::mpi {

/// A duplicated MPI communicator with its rank and size. Not copyable;
/// share it through the shared_ptr duplicate() returns. Thread-compatible
/// (Note [MPI threads]).
class Communicator {
 public:
  /// Duplicates `comm` (MPI_Comm_dup: collective over `comm`, every rank
  /// must call it) and sets MPI_ERRORS_RETURN on the duplicate. Borrows
  /// `comm` for the call only. kFailedPrecondition when MPI is not
  /// initialised or already finalised; kUnavailable for an MPI error.
  static Result<std::shared_ptr<Communicator>> duplicate(MPI_Comm comm);

  /// Frees the duplicate (skipped when MPI is already finalised).
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const noexcept { return rank_; }
  int size() const noexcept { return size_; }
  /// The duplicate (owned by this object; do not free it).
  MPI_Comm comm() const noexcept { return comm_; }

 private:
  Communicator(MPI_Comm comm, int rank, int size) noexcept : comm_(comm), rank_(rank), size_(size) {}

  MPI_Comm comm_;
  int rank_;
  int size_;
};

/// ok for MPI_SUCCESS; otherwise kUnavailable naming `call` with
/// MPI_Error_string's text and the error class.
Status mpi_status(int code, std::string_view call);

/// ok while MPI is running; kFailedPrecondition naming `what` once the
/// application has finalised it (MPI aborts the process on any call but a
/// few after MPI_Finalize, so every collective checks this first).
Status mpi_running(std::string_view what);

}  // namespace tenferro::mpi
