// Communicator (communicator.h): duplication, error handler, teardown, and
// the translation of MPI error codes.
#include "tenferro/mpi/communicator.h"

#include <fmt/format.h>

namespace tenferro::mpi {

Status mpi_status(int code, std::string_view call) {
  if (code == MPI_SUCCESS) return ok_status();
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  int error_class = code;
  if (MPI_Error_class(code, &error_class) != MPI_SUCCESS) error_class = code;
  return make_error(ErrorCode::kUnavailable, ErrorStage::kNone,
                    "{}: expected MPI_SUCCESS, found error {} ({}, class {})", call, code,
                    length > 0 ? std::string_view(text, static_cast<std::size_t>(length)) : "no text", error_class);
}

Status mpi_running(std::string_view what) {
  int finalized = 0;
  TENFERRO_TRY(mpi_status(MPI_Finalized(&finalized), "MPI_Finalized"));
  if (!finalized) return ok_status();
  return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kNone,
                    "{}: expected MPI to be running, found it finalised (MPI_Finalize ran before this call)", what);
}

Result<std::shared_ptr<Communicator>> Communicator::duplicate(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  TENFERRO_TRY(mpi_status(MPI_Initialized(&initialized), "MPI_Initialized"));
  TENFERRO_TRY(mpi_status(MPI_Finalized(&finalized), "MPI_Finalized"));
  if (!initialized || finalized) {
    return make_error(ErrorCode::kFailedPrecondition, ErrorStage::kConfiguration,
                      "communicator: expected MPI to be initialised by the application (MPI_Init) and not finalised; "
                      "found it {}",
                      finalized ? "finalised" : "not initialised");
  }
  if (comm == MPI_COMM_NULL) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "communicator: expected a valid MPI communicator, found MPI_COMM_NULL");
  }
  // Collectives over an intercommunicator reduce across its two groups
  // (and MPI_Comm_split_type, for the node rank, crashed Open MPI 4.1).
  int inter = 0;
  TENFERRO_TRY(mpi_status(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter"));
  if (inter) {
    return make_error(ErrorCode::kInvalidArgument, ErrorStage::kConfiguration,
                      "communicator: expected an intracommunicator, found an intercommunicator (MPI_Intercomm_merge "
                      "it first)");
  }
  MPI_Comm dup = MPI_COMM_NULL;
  TENFERRO_TRY(mpi_status(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup"));
  const auto fail = [&](Status s) {
    MPI_Comm_free(&dup);
    return s;
  };
  if (Status s = mpi_status(MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler"); !s.ok())
    return fail(std::move(s));
  int rank = 0, size = 0;
  if (Status s = mpi_status(MPI_Comm_rank(dup, &rank), "MPI_Comm_rank"); !s.ok()) return fail(std::move(s));
  if (Status s = mpi_status(MPI_Comm_size(dup, &size), "MPI_Comm_size"); !s.ok()) return fail(std::move(s));
  return std::shared_ptr<Communicator>(new Communicator(dup, rank, size));
}

Communicator::~Communicator() {
  int finalized = 1;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) MPI_Comm_free(&comm_);
}

}  // namespace tenferro::mpi
