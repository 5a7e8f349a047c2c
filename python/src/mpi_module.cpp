// The extension module tenferro._mpi (docs/mpi.md, "From Python"): the
// sliced einsum of tenferro::mpi for Python programs whose MPI is mpi4py's.
// Built only with MPI, and kept out of tenferro._tenferro so that importing
// tenferro never loads the MPI library; python/tenferro/mpi.py wraps it.
//
// Note [Python communicators]
// A _mpi.Communicator is one rank's share of the seed's process model: a
// duplicate of the application's communicator (mpi4py's, passed as its
// Fortran handle, which every MPI converts back with MPI_Comm_f2c), a
// Runtime that reduces on it, a managed CPU domain of `threads` CPUs placed
// as Note [Rank CPU domains] says, and a bounded cache of planned splits.
// Every method is collective and makes the same MPI calls in the same
// order on every rank whatever happened locally: the operands are checked
// and the split planned (or found in the cache) without MPI, the outcome
// and the plan's fingerprint are agreed (mpi::agree_on_split), then the
// contraction and its allreduce run (mpi::run_slices_over_ranks, which
// agrees once more before the data moves). A Python error on one rank
// (an operand numpy cannot convert) takes part in the agreement as that
// rank's failure, so every rank raises instead of leaving the others
// waiting: the failing rank its own exception, the others the agreed
// error. The cache is per rank; a hit on one rank and a miss on another
// still make the same calls. Calls on one communicator from several Python
// threads run one at a time, but in no agreed order across ranks (thread
// A's allreduce on one rank may meet thread B's on another): use one
// Communicator per thread, as MPI asks of one communicator. A call from a
// thread the MPI thread level does not allow is kFailedPrecondition.
//
// Note [Pooled results]
// The result is reduced in place, so MPI moves the result's own pages. On
// the 2-vCPU VM an MPI_Allreduce of 480 KB took 3.1 ms when the buffer
// was freshly allocated (Open MPI's shared-memory transport maps the
// peer's pages for a single copy; process_vm_readv and page faults led
// the profile) against 0.1 ms when the buffer was reused, and a 300 x 200
// result over two ranks took 2.4 ms against 0.54 ms on one: glibc gave
// the freed result's pages back to the kernel between calls. Results are
// therefore allocated from the rank domain's memory pool, which keeps freed
// blocks (up to its cache bound) and reuses them once the numpy array that
// holds one is gone.
//
// Note [Python collectives]
// allreduce, reduce, broadcast, allgather, reduce_scatter, send and recv
// take array-likes and return new numpy arrays, as numpy functions do: the
// argument is copied once into a fresh row-major tensor (the returned array
// is over it), from the rank domain's pool as einsum results are (Note
// [Pooled results]; the MPI audit measured a 1 MiB allreduce into new pages
// at 34 ms against 2 ms for mpi4py's into a reused buffer), which the checked collective
// (tenferro::mpi, Note [Checked collectives]) updates in place. The dtypes
// are those MPI reduces: bool, int32, int64, float32, float64, complex64,
// complex128. A failure to convert an argument on one rank (a float16
// array, an unknown op) is agreed (mpi::agree) before the collective, so
// every rank raises -- that rank its own exception -- and none waits; the
// collective's own agreement then catches different shapes, dtypes and
// roots. broadcast sends the root's dtype and shape first, so the other
// ranks may pass None. A send whose argument fails still sends an error
// header, so the receiver raises too.
#define TENFERRO_PYTHON_IMPORT_ARRAY
#include "numpy_api.h"

#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "array_bridge.h"
#include "optimize.h"
#include "small_lru.h"
#include "tenferro/cpu/gemm/native_gemm.h"
#include "tenferro/cpu_runtime/cpu_runtime.h"
#include "tenferro/einsum/einsum_op.h"
#include "tenferro/einsum/planner.h"
#include "tenferro/einsum/slicing.h"
#include "tenferro/einsum_cpu.h"
#include "tenferro/einsum_cpu/slice_executor.h"
#include "tenferro/mpi.h"
#include "tenferro/tensor/host_interop.h"

namespace tenferro::python {
namespace {

// An int argument of MPI (a rank, a tag, a thread count): a Python integer
// that fits a C int. A larger one is an error, as in mpi4py (OverflowError
// there), instead of being cut to 32 bits (a send to tag 2**32 + 5 reached
// recv(tag=5)).
int mpi_int(py::handle value, const char* what) {
  const std::int64_t v = as_index(value, what);
  if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
    raise_error(ErrorCode::kOutOfRange,
                fmt::format("{}: expected an integer that fits a C int (MPI's type for it), found {}", what, v));
  }
  return static_cast<int>(v);
}

// The communicator id the rank runtime binds (one communicator per runtime).
constexpr std::uint64_t kRankCommunicator = 1;

// One planned split and this rank's part of it.
struct Split {
  einsum::WorkerSlicing workers;
  std::optional<einsum::WorkerSliceExecutor> runner;  // this rank's share
  DType dtype;
};

// The operands of one call, converted, and the error that stopped it.
struct CallOperands {
  std::string subscripts;
  OperandList list;
  OptimizeSpec optimize;
  double max_intermediate_bytes = 0.0;   // 0: no bound
  int root = mpi::kEveryRank;            // einsum's root=: the rank that receives the sum
  py::object result_dtype = py::none();  // numpy's result dtype, when it differs
  std::string operand_dtypes;            // the operands' own dtypes, kind and size ("f4,f8"), agreed
  std::optional<py::error_already_set> python_error;
  Status status = ok_status();
};

class PyCommunicator {
 public:
  PyCommunicator(std::int64_t fortran_handle, py::handle threads) {
    int initialized = 0;
    int finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized) {
      raise_error(ErrorCode::kFailedPrecondition,
                  finalized ? std::string("tenferro.mpi.Communicator: expected a running MPI, found it finalised "
                                          "(MPI_Finalize ran before this call)")
                            : std::string("tenferro.mpi.Communicator: expected an initialised MPI, found it not "
                                          "initialised (import mpi4py.MPI first: the application owns MPI_Init and "
                                          "MPI_Finalize)"));
    }
    const MPI_Comm comm = MPI_Comm_f2c(static_cast<MPI_Fint>(fortran_handle));
    if (comm == MPI_COMM_NULL) {
      raise_error(ErrorCode::kInvalidArgument,
                  "tenferro.mpi.Communicator: expected a communicator, found MPI.COMM_NULL");
    }
    // Collective from here on: every rank duplicates, then agrees on the
    // rest of its set-up (Note [Python communicators]).
    comm_ = value_or_raise(mpi::Communicator::duplicate(comm));
    const Result<int> node_rank = mpi::node_rank(*comm_);  // collective: before anything may fail locally
    std::optional<py::error_already_set> python_error;
    const Status local = [&]() -> Status {
      try {
        threads_ = mpi_int(threads, "tenferro.mpi.Communicator threads");
      } catch (py::error_already_set& e) {
        python_error.emplace(std::move(e));
        return status_of(*python_error);
      }
      if (threads_ < 1) {
        return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                          "tenferro.mpi.Communicator: threads={}: expected at least 1", threads_);
      }
      TENFERRO_ASSIGN_OR_RETURN(runtime::Runtime rt, mpi::rank_runtime(comm_, kRankCommunicator));
      runtime_.emplace(std::move(rt));
      TENFERRO_TRY(node_rank.status());
      Result<std::shared_ptr<const cpu::CpuDomainSet>> domains =
          cpu::make_managed_domains(threads_, *node_rank * threads_);
      if (!domains.ok()) {
        return make_error(domains.status().code(), domains.status().stage(),
                          "{} (mpirun binds each rank to its own cores; --bind-to none or --map-by slot:PE={} gives "
                          "a rank more)",
                          domains.status().message(), threads_);
      }
      domains_ = std::move(domains).value();
      TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<cpu::NativeGemmProvider> gemm, cpu::NativeGemmProvider::create());
      TENFERRO_ASSIGN_OR_RETURN(executor_, einsum::CpuEinsumExecutor::create(
                                               std::make_shared<const cpu::DotGeneralComposite>(std::move(gemm))));
      return ok_status();
    }();
    const Status agreed = mpi::agree(*comm_, local);
    if (!agreed.ok() && python_error) throw *python_error;  // this rank's own error
    ok_or_raise(agreed);
    warn_if_cpus_are_shared();
  }

  // Collective (Note [Rank CPU domains]): a RuntimeWarning on rank 0 when
  // the ranks' domains on some node pin two or more ranks' workers to the
  // same CPUs (ranks x threads above the CPUs they may use: --bind-to none,
  // --oversubscribe), which docs/mpi.md advises against and which ran
  // silently (the MPI audit of 2026-12-07). A warning turned into an error
  // (python -W error) is agreed like any other failure, so every rank
  // raises.
  void warn_if_cpus_are_shared() {
    const Result<mpi::NodeCpuSharing> sharing = mpi::node_cpu_sharing(*comm_, domains_->default_domain().cpus());
    ok_or_raise(sharing.status());
    std::optional<py::error_already_set> python_error;
    Status local;
    if (sharing->most_shared > 0 && rank() == 0) {
      const std::string warning = fmt::format(
          "tenferro.mpi.Communicator: ranks x threads exceed the CPUs the ranks may use: on the most crowded node "
          "{} CPU(s) are pinned by two or more ranks' domains (rank 0's node: {} rank(s) x threads={} over {} "
          "CPUs), so their threads compete for cores; use fewer ranks or threads per node, or let mpirun bind "
          "each rank to its own cores (docs/mpi.md, \"Threads per rank\")",
          sharing->most_shared, sharing->node_ranks, threads_, sharing->cpus);
      if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) {
        python_error.emplace();
        local = status_of(*python_error);
      }
    }
    const Status agreed = mpi::agree(*comm_, local);
    if (!agreed.ok() && python_error) throw *python_error;
    ok_or_raise(agreed);
  }

  int rank() const noexcept { return comm_->rank(); }
  int size() const noexcept { return comm_->size(); }
  int threads() const noexcept { return threads_; }

  // Collective: the contraction over every rank, its sum on every rank (or
  // on `root` only; the others return None).
  py::object einsum(py::handle subscripts, py::handle operands, py::handle optimize, py::handle max_intermediate_bytes,
                    py::handle root) {
    const std::unique_lock<std::mutex> lock = serialize();
    CallOperands call;
    convert(call, subscripts, operands, optimize, max_intermediate_bytes);
    convert_root(call, root);
    Split* split = find_or_plan(call, "tenferro.mpi einsum");
    Tensor output;
    Status status;
    {
      GilRelease release(kNotAwaitedAtExit);
      status = [&]() -> Status {
        // From the rank domain's pool (Note [Pooled results]).
        const cpu::CpuResourceDomain& domain = domains_->default_domain();
        TENFERRO_ASSIGN_OR_RETURN(output, Tensor::empty(IntArrayRef(split->workers.part(0).network().output_shape()),
                                                        split->dtype, MemoryOrder::kRowMajor, domain.memory()));
        std::vector<TensorView> views;
        for (const Tensor& t : call.list.tensors()) views.push_back(t.view());
        return mpi::run_slices_over_ranks(*comm_, *runtime_, kRankCommunicator, *split->runner, views, output, domain,
                                          nullptr, call.root);
      }();
    }
    ok_or_raise(status);
    if (call.root != mpi::kEveryRank && call.root != rank()) return py::none();  // holds only this rank's share
    return scalar_if_0d(OperandList::finish(tensor_to_numpy(std::move(output)), call.result_dtype));
  }

  // Collective: the split einsum() would run, as a dict.
  py::dict plan(py::handle subscripts, py::handle operands, py::handle optimize, py::handle max_intermediate_bytes) {
    const std::unique_lock<std::mutex> lock = serialize();
    CallOperands call;
    convert(call, subscripts, operands, optimize, max_intermediate_bytes);
    const Split& split = *find_or_plan(call, "tenferro.mpi plan");
    const einsum::SlicedContraction& first = split.workers.part(0);
    std::int64_t my_slices = 0;  // over this rank's parts (Note [Range chunks]: several ranges each)
    double my_largest = 0.0;
    for (const einsum::SliceExecutor& part : split.runner->parts()) {
      my_slices += part.sliced().num_slices();
      my_largest = std::max(my_largest, part.sliced().slice_max_intermediate_bytes());
    }
    py::dict d;
    d["split"] = split.workers.is_range_split() ? "range" : "round_robin";
    d["range_label"] = first.has_range() ? py::object(py::str(first.network().label_name(first.range().label)))
                                         : py::object(py::none());
    py::list labels;
    for (einsum::LabelId l : first.sliced_labels()) labels.append(first.network().label_name(l));
    d["sliced_labels"] = labels;
    d["slices"] = my_slices;
    d["ranges"] = split.workers.is_range_split() ? split.workers.parts().size() : 0;
    d["rank_flops"] = split.workers.worker_flops(rank());
    d["flops"] = first.tree().cost().flops;
    d["overhead"] = split.workers.overhead();
    d["speedup_bound"] = split.workers.speedup_bound();
    d["work_speedup_bound"] = split.workers.work_speedup_bound();
    d["slice_max_intermediate_bytes"] = my_largest;
    d["path"] = first.tree().order().to_string();
    d["explain"] = split.workers.explain();
    return d;
  }

  // --- collectives on arrays (Note [Python collectives]) ---

  py::object allreduce(py::handle x, py::handle op) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    const mpi::ReduceOp reduce_op = local.run([&] { return reduce_op_of(op); }, mpi::ReduceOp::kSum);
    // Out of place: x is read where it lies (a C-contiguous array is not
    // copied), the result goes to a fresh buffer.
    py::object input;
    const Tensor in = local.run([&] { return borrowed(x, "allreduce", input); }, Tensor{});
    CollectiveBuffer b = local.run([&] { return fresh_buffer(in.dtype(), in.shape()); }, CollectiveBuffer{});
    agree(local, "tenferro.mpi allreduce");
    ok_or_raise(released([&] { return mpi::allreduce(*comm_, in, b.tensor, reduce_op); }));
    return b.array;
  }

  py::object reduce(py::handle x, py::handle op, py::handle root) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    const mpi::ReduceOp reduce_op = local.run([&] { return reduce_op_of(op); }, mpi::ReduceOp::kSum);
    const int r = local.run([&] { return root_of(root); }, 0);
    CollectiveBuffer b = local.run([&] { return buffer_of(x, "reduce"); }, CollectiveBuffer{});
    agree(local, "tenferro.mpi reduce");
    ok_or_raise(released([&] { return mpi::reduce(*comm_, b.tensor, reduce_op, r); }));
    return r == rank() ? b.array : py::none();
  }

  py::object broadcast(py::handle x, py::handle root) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    const int r = local.run([&] { return root_of(root); }, 0);
    const bool at_root = r == rank();
    // Only the root's x is read (the others receive into a buffer of the
    // root's dtype and shape, whatever they passed).
    CollectiveBuffer b = local.run(
        [&] {
          if (at_root && x.is_none()) {
            raise_error(ErrorCode::kInvalidArgument,
                        fmt::format("broadcast: expected an array on the root (rank {}), found None", r));
          }
          return at_root ? buffer_of(x, "broadcast") : CollectiveBuffer{};
        },
        CollectiveBuffer{});
    agree(local, "tenferro.mpi broadcast");
    // The root's dtype and shape first: the other ranks may pass None.
    Tensor header = value_or_raise(Tensor::zeros({2 + kMaxHeaderRank}, DType::kInt64));
    auto* h = static_cast<std::int64_t*>(header.data());
    if (at_root) {
      if (b.tensor.rank() > kMaxHeaderRank) {
        local.fail(make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                              "broadcast: expected at most {} dimensions, found {}", kMaxHeaderRank, b.tensor.rank()));
      } else {
        h[0] = static_cast<std::int64_t>(b.tensor.dtype());
        h[1] = b.tensor.rank();
        for (std::int64_t i = 0; i < b.tensor.rank(); ++i) h[2 + i] = b.tensor.shape()[static_cast<std::size_t>(i)];
      }
    }
    agree(local, "tenferro.mpi broadcast header");
    ok_or_raise(released([&] { return mpi::broadcast(*comm_, header, r); }));
    if (!at_root) {
      const auto dtype = static_cast<DType>(h[0]);
      const Dims shape(h + 2, h + 2 + h[1]);
      b = fresh_buffer(dtype, shape);
    }
    ok_or_raise(released([&] { return mpi::broadcast(*comm_, b.tensor, r); }));
    return b.array;
  }

  py::object allgather(py::handle x) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    CollectiveBuffer mine = local.run([&] { return buffer_of(x, "allgather"); }, CollectiveBuffer{});
    CollectiveBuffer all;
    if (local.ok()) {
      Dims shape{size()};
      for (const std::int64_t e : mine.tensor.shape()) shape.push_back(e);
      all = fresh_buffer(mine.tensor.dtype(), shape);
      if (mine.tensor.nbytes() > 0) {
        std::memcpy(static_cast<char*>(all.tensor.data()) + static_cast<std::size_t>(rank()) * mine.tensor.nbytes(),
                    mine.tensor.data(), mine.tensor.nbytes());
      }
    }
    agree(local, "tenferro.mpi allgather");
    ok_or_raise(released([&] { return mpi::allgather(*comm_, all.tensor); }));
    return all.array;
  }

  py::object reduce_scatter(py::handle x, py::handle op) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    const mpi::ReduceOp reduce_op = local.run([&] { return reduce_op_of(op); }, mpi::ReduceOp::kSum);
    CollectiveBuffer b = local.run([&] { return buffer_of(x, "reduce_scatter"); }, CollectiveBuffer{});
    agree(local, "tenferro.mpi reduce_scatter");
    Result<Tensor> block = [&] {
      GilRelease release(kNotAwaitedAtExit);
      return mpi::reduce_scatter(*comm_, b.tensor, reduce_op);
    }();
    ok_or_raise(block.status());
    // In place, MPI_Reduce_scatter_block leaves this rank's block first.
    return b.array.attr("__getitem__")(0).attr("copy")();
  }

  void send(py::handle x, py::handle dest, py::handle tag) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    const int d = local.run([&] { return mpi_int(dest, "send dest"); }, -1);
    const int t = local.run([&] { return mpi_int(tag, "send tag"); }, -1);
    const CollectiveBuffer b = local.run([&] { return buffer_of(x, "send"); }, CollectiveBuffer{});
    // A failed conversion still sends (an error header), so the receiver
    // raises too instead of waiting.
    const Status sent = released([&] { return mpi::send(*comm_, b.tensor, d, t); });
    if (local.python_error) throw *local.python_error;
    ok_or_raise(sent);
  }

  py::object recv(py::handle source, py::handle shape, py::handle dtype, py::handle tag) {
    const std::unique_lock<std::mutex> lock = serialize();
    Local local;
    const int s = local.run([&] { return mpi_int(source, "recv source"); }, -1);
    const int t = local.run([&] { return mpi_int(tag, "recv tag"); }, -1);
    CollectiveBuffer b =
        local.run([&] { return buffer_of(py::module_::import("numpy").attr("empty")(shape, dtype), "recv"); },
                  CollectiveBuffer{});
    const Status received = released([&] { return mpi::recv(*comm_, b.tensor, s, t); });
    if (local.python_error) throw *local.python_error;
    ok_or_raise(received);
    return b.array;
  }

  std::size_t cached_splits() const noexcept { return splits_.size(); }
  /// Allocations the rank domain's pool served from freed blocks (Note
  /// [Pooled results]).
  std::uint64_t reused_blocks() const { return domains_->default_domain().memory()->stats().reused; }

 private:
  // --- helpers of the collectives (Note [Python collectives]) ---

  static constexpr std::int64_t kMaxHeaderRank = 32;

  struct CollectiveBuffer {
    py::object array = py::none();  // the result, over `tensor`'s memory
    Tensor tensor;
  };

  // This rank's outcome before a collective: the first failure, and the
  // Python exception to raise on this rank for it.
  struct Local {
    Status status = ok_status();
    std::optional<py::error_already_set> python_error;
    bool ok() const noexcept { return status.ok(); }
    template <class T, class F>
    T run(F&& f, T fallback) {
      if (!status.ok()) return fallback;
      try {
        return f();
      } catch (py::error_already_set& e) {
        status = status_of(e);
        python_error.emplace(std::move(e));
        return fallback;
      }
    }
    void fail(Status s) {
      if (status.ok()) status = std::move(s);
    }
  };

  template <class F>
  static Status released(F&& f) {
    GilRelease release(kNotAwaitedAtExit);
    return f();
  }

  // Agrees `local` over the ranks: this rank's own exception, or the agreed
  // error of another rank, on every rank. `what` names the method, so ranks
  // in different methods fail together at this step and stay in step.
  void agree(Local& local, std::string_view what) {
    const Status agreed = released([&] { return mpi::agree(*comm_, local.status, what); });
    if (agreed.ok()) return;
    if (local.python_error) throw *local.python_error;
    raise_status(agreed);
  }

  static std::optional<DType> collective_dtype(const PyArray_Descr* d) noexcept {
    switch (d->kind) {
      case 'b':
        return DType::kBool;
      case 'i':
        return d->elsize == 4   ? std::optional(DType::kInt32)
               : d->elsize == 8 ? std::optional(DType::kInt64)
                                : std::nullopt;
      case 'f':
        return d->elsize == 4   ? std::optional(DType::kFloat32)
               : d->elsize == 8 ? std::optional(DType::kFloat64)
                                : std::nullopt;
      case 'c':
        return d->elsize == 8    ? std::optional(DType::kComplex64)
               : d->elsize == 16 ? std::optional(DType::kComplex128)
                                 : std::nullopt;
      default:
        return std::nullopt;
    }
  }

  // A new row-major tensor from the rank domain's pool (Note [Pooled
  // results]) and the numpy array over it.
  CollectiveBuffer fresh_buffer(DType dtype, IntArrayRef shape) const {
    CollectiveBuffer b;
    b.tensor = value_or_raise(Tensor::empty(shape, dtype, MemoryOrder::kRowMajor, domains_->default_domain().memory()));
    b.array = tensor_to_numpy(b.tensor);
    return b;
  }

  // `x` (an array-like) as a C-contiguous aligned native array (`array`,
  // which owns the memory while the Tensor is used) borrowed as a Tensor.
  Tensor borrowed(py::handle x, const char* what, py::object& array) {
    PyObject* converted = PyArray_FROM_OF(x.ptr(), NPY_ARRAY_C_CONTIGUOUS | NPY_ARRAY_ALIGNED | NPY_ARRAY_NOTSWAPPED);
    if (converted == nullptr) throw py::error_already_set();
    array = py::reinterpret_steal<py::object>(converted);
    auto* a = reinterpret_cast<PyArrayObject*>(converted);
    const std::optional<DType> dtype = collective_dtype(PyArray_DESCR(a));
    if (!dtype) {
      raise_error(ErrorCode::kDTypeMismatch,
                  fmt::format("{}: expected an array of dtype bool, int32, int64, float32, float64, complex64 or "
                              "complex128, found {}",
                              what, std::string(py::str(array.attr("dtype")))));
    }
    const Dims shape(PyArray_DIMS(a), PyArray_DIMS(a) + PyArray_NDIM(a));
    return value_or_raise(adopt_host(PyArray_DATA(a), shape, *dtype, [](void*) {}));
  }

  // `x` (an array-like) copied into a fresh buffer of its dtype.
  CollectiveBuffer buffer_of(py::handle x, const char* what) {
    py::object array;
    const Tensor in = borrowed(x, what, array);
    CollectiveBuffer b = fresh_buffer(in.dtype(), in.shape());
    if (b.tensor.nbytes() > 0) std::memcpy(b.tensor.data(), in.data(), b.tensor.nbytes());
    return b;
  }

  // op= "sum", "prod", "max", "min", "land", "lor" or mpi4py's MPI.SUM, ...
  static mpi::ReduceOp reduce_op_of(py::handle op) {
    static constexpr std::pair<std::string_view, mpi::ReduceOp> kOps[] = {
        {"sum", mpi::ReduceOp::kSum}, {"prod", mpi::ReduceOp::kProd},       {"max", mpi::ReduceOp::kMax},
        {"min", mpi::ReduceOp::kMin}, {"land", mpi::ReduceOp::kLogicalAnd}, {"lor", mpi::ReduceOp::kLogicalOr}};
    constexpr std::string_view kExpected = "expected op 'sum', 'prod', 'max', 'min', 'land' or 'lor' (or MPI.SUM, ...)";
    if (PyUnicode_Check(op.ptr())) {
      const std::string name = py::cast<std::string>(op);
      for (const auto& [n, o] : kOps)
        if (n == name) return o;
      raise_error(ErrorCode::kInvalidArgument, fmt::format("{}, found '{}'", kExpected, name));
    }
    if (PyObject* mpi4py = PyImport_GetModule(py::str("mpi4py.MPI").ptr())) {
      const py::object m = py::reinterpret_steal<py::object>(mpi4py);
      for (const auto& [n, o] : kOps) {
        std::string upper(n);
        for (char& ch : upper) ch = static_cast<char>(ch - 'a' + 'A');
        if (op.equal(m.attr(upper.c_str()))) return o;
      }
      if (py::isinstance(op, m.attr("Op"))) {  // another MPI operation: a value of the wrong kind, not a type
        raise_error(ErrorCode::kInvalidArgument, fmt::format("{}, found another MPI.Op", kExpected));
      }
    }
    raise_type_error(fmt::format("{}, found {}", kExpected, type_name(op)));
  }

  static int root_of(py::handle root) { return mpi_int(root, "root"); }

  // One call at a time per communicator, as MPI orders collectives on one
  // communicator anyway; a Python thread waiting here does not hold the GIL
  // (the call inside releases it around MPI).
  // A call from a thread MPI does not allow (mpi4py's thread level below
  // SERIALIZED, from a thread other than the one that initialised MPI) is
  // an error here instead of undefined behaviour inside MPI.
  std::unique_lock<std::mutex> serialize() {
    int initialized = 0, finalized = 0, level = MPI_THREAD_MULTIPLE, main = 1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) {
      MPI_Query_thread(&level);
      MPI_Is_thread_main(&main);
      if (level < MPI_THREAD_SERIALIZED && !main) {
        raise_error(ErrorCode::kFailedPrecondition,
                    fmt::format("tenferro.mpi: expected a call from the thread that initialised MPI, or MPI "
                                "initialised with MPI_THREAD_SERIALIZED or above, found a call from another thread "
                                "at thread level {} (set mpi4py.rc.thread_level = \"serialized\" before importing "
                                "mpi4py.MPI, or call from the main thread)",
                                level == MPI_THREAD_SINGLE ? "single" : "funneled"));
      }
    }
    std::unique_lock<std::mutex> lock(mutex_, std::defer_lock);
    GilRelease release(kNotAwaitedAtExit);
    lock.lock();
    return lock;
  }

  // The arguments, checked, and the operands as tensors of the dtype
  // tenferro computes in; a failure is kept for the agreement instead of
  // raised (Note [Python communicators]).
  static void convert(CallOperands& call, py::handle subscripts, py::handle operands, py::handle optimize,
                      py::handle max_intermediate_bytes) {
    try {
      if (!PyUnicode_Check(subscripts.ptr())) {
        raise_type_error(fmt::format("einsum: subscripts must be a str, found {}", type_name(subscripts)));
      }
      call.subscripts = py::cast<std::string>(subscripts);
      const py::tuple items = py::reinterpret_borrow<py::tuple>(operands);
      for (std::size_t i = 0; i < items.size(); ++i) {
        call.list.add(items[i], "einsum operand", static_cast<std::ptrdiff_t>(i), OperandList::Accept::kNumeric);
        // Kind and size, not byte order: a big-endian copy holds the same values.
        const PyArray_Descr* descr = PyArray_DESCR(reinterpret_cast<PyArrayObject*>(call.list.array(i).ptr()));
        if (i > 0) call.operand_dtypes += ',';
        call.operand_dtypes += fmt::format("{}{}", descr->kind, descr->elsize);
      }
      call.result_dtype = call.list.unify_numeric();
      call.list.wrap();
      call.optimize = parse_optimize(optimize);
      call.max_intermediate_bytes = max_intermediate_bytes_of(max_intermediate_bytes);
    } catch (py::error_already_set& e) {
      call.status = status_of(e);
      call.python_error.emplace(std::move(e));
    }
  }

  // einsum's root= (None: every rank), checked against the communicator;
  // a failure is kept for the agreement as convert()'s are.
  void convert_root(CallOperands& call, py::handle root) const {
    if (!call.status.ok() || root.is_none()) return;
    try {
      const std::int64_t r = as_index(root, "tenferro.mpi einsum root");
      if (r < 0 || r >= size()) {
        raise_error(ErrorCode::kInvalidArgument,
                    fmt::format("tenferro.mpi einsum: expected root=None or a rank in [0, {}), found {}", size(), r));
      }
      call.root = static_cast<int>(r);
    } catch (py::error_already_set& e) {
      call.status = status_of(e);
      call.python_error.emplace(std::move(e));
    }
  }

  // This call's split from the cache, or planned; collective (the outcome
  // and the plan are agreed on every call). Raises on failure.
  Split* find_or_plan(CallOperands& call, std::string_view what) {
    std::string key = call.status.ok() ? cache_key(call) : "";
    Split* split = call.status.ok() ? splits_.find(key) : nullptr;
    std::optional<Result<einsum::WorkerSlicing>> planned;
    if (split == nullptr)
      planned.emplace(call.status.ok() ? plan_split(call) : Result<einsum::WorkerSlicing>(call.status));
    const DType dtype = call.status.ok() && call.list.size() > 0 ? call.list.dtype(0) : DType::kFloat64;
    Status agreed;
    {
      GilRelease release(kNotAwaitedAtExit);
      // The operands' own dtypes too: float32 on one rank and float64 on
      // another both contract in float64 (the MPI audit of 2026-12-07).
      agreed = split != nullptr ? mpi::agree_on_split(*comm_, split->workers, dtype, what, call.operand_dtypes)
                                : mpi::agree_on_split(*comm_, *planned, dtype, what, call.operand_dtypes);
    }
    if (!agreed.ok()) {
      if (call.python_error) throw *call.python_error;  // this rank's own error
      raise_status(agreed);
    }
    // This rank's part, agreed too; a rank that found its split in the
    // cache agrees with an ok status (the same calls on every rank).
    std::optional<Result<einsum::WorkerSliceExecutor>> runner;
    if (split == nullptr) runner.emplace(einsum::WorkerSliceExecutor::create(**planned, rank(), executor_));
    {
      GilRelease release(kNotAwaitedAtExit);
      agreed = mpi::agree(*comm_, runner ? runner->status() : ok_status());
    }
    ok_or_raise(agreed);
    if (split != nullptr) return split;
    return &splits_.insert(std::move(key),
                           Split{std::move(*planned).value(), std::move(*runner).value(), call.list.dtype(0)});
  }

  Result<einsum::WorkerSlicing> plan_split(const CallOperands& call) const {
    if (call.list.size() == 0) {
      return make_error(ErrorCode::kInvalidArgument, ErrorStage::kNone,
                        "tenferro.mpi einsum '{}': expected at least one operand", call.subscripts);
    }
    std::vector<IntArrayRef> shapes;
    for (const Tensor& t : call.list.tensors()) shapes.push_back(t.shape());
    TENFERRO_ASSIGN_OR_RETURN(einsum::PlanningPolicy policy,
                              policy_of(call.optimize, static_cast<std::int32_t>(call.list.size())));
    TENFERRO_ASSIGN_OR_RETURN(std::shared_ptr<const einsum::EinsumOp> op,
                              einsum::EinsumOp::create(call.subscripts, policy));
    TENFERRO_ASSIGN_OR_RETURN(einsum::Network network, op->bind(shapes, call.list.dtype(0)));
    // Every rank must plan the same tree: no wall-clock budget.
    einsum::PlanningConfig config;
    config.determinism = einsum::Determinism::kReproducible;
    TENFERRO_ASSIGN_OR_RETURN(einsum::ContractionTree tree, einsum::plan(network, policy, config));
    einsum::SlicingOptions options;
    options.max_intermediate_bytes = call.max_intermediate_bytes;
    options.min_slices = size();
    options.workers = size();
    // On one rank, index slicing or ranges run in turn (Note [Range chunks]).
    return size() == 1 ? einsum::WorkerSlicing::plan_sequential(tree, options)
                       : einsum::WorkerSlicing::plan(tree, options);
  }

  static std::string cache_key(const CallOperands& call) {
    std::string key = fmt::format("{}\x1f{}\x1f{}\x1f", call.subscripts, static_cast<int>(call.optimize.planner),
                                  call.max_intermediate_bytes);
    key += path_key(call.optimize);
    if (call.list.size() > 0) fmt::format_to(std::back_inserter(key), "\x1f{}", static_cast<int>(call.list.dtype(0)));
    for (const Tensor& t : call.list.tensors()) {
      key += '\x1f';
      for (std::int64_t e : t.shape()) fmt::format_to(std::back_inserter(key), "{},", e);
    }
    return key;
  }

  // Destroyed in reverse: the runtime, whose collective provider retains
  // comm_, before comm_.
  std::shared_ptr<mpi::Communicator> comm_;
  std::optional<runtime::Runtime> runtime_;
  std::shared_ptr<const cpu::CpuDomainSet> domains_;
  std::shared_ptr<einsum::CpuEinsumExecutor> executor_;
  int threads_ = 1;
  std::mutex mutex_;            // serializes einsum and plan (serialize())
  SmallLru<Split> splits_{16};  // planned splits, most recently used first
};

}  // namespace
}  // namespace tenferro::python

PYBIND11_MODULE(_mpi, m) {
  using tenferro::python::PyCommunicator;
  m.doc() = "tenferro's sliced einsum over MPI ranks (wrapped by tenferro.mpi; docs/mpi.md)";
  namespace py = pybind11;
  if (_import_array() < 0) throw py::error_already_set();
  py::class_<PyCommunicator>(m, "Communicator")
      .def(py::init<std::int64_t, py::handle>(), py::arg("fortran_handle"), py::arg("threads"))
      .def_property_readonly("rank", &PyCommunicator::rank)
      .def_property_readonly("size", &PyCommunicator::size)
      .def_property_readonly("threads", &PyCommunicator::threads)
      .def("einsum", &PyCommunicator::einsum, py::arg("subscripts"), py::arg("operands"), py::arg("optimize"),
           py::arg("max_intermediate_bytes"), py::arg("root"))
      .def("plan", &PyCommunicator::plan, py::arg("subscripts"), py::arg("operands"), py::arg("optimize"),
           py::arg("max_intermediate_bytes"))
      .def("allreduce", &PyCommunicator::allreduce, py::arg("x"), py::arg("op"))
      .def("reduce", &PyCommunicator::reduce, py::arg("x"), py::arg("op"), py::arg("root"))
      .def("broadcast", &PyCommunicator::broadcast, py::arg("x"), py::arg("root"))
      .def("allgather", &PyCommunicator::allgather, py::arg("x"))
      .def("reduce_scatter", &PyCommunicator::reduce_scatter, py::arg("x"), py::arg("op"))
      .def("send", &PyCommunicator::send, py::arg("x"), py::arg("dest"), py::arg("tag"))
      .def("recv", &PyCommunicator::recv, py::arg("source"), py::arg("shape"), py::arg("dtype"), py::arg("tag"))
      .def("cached_splits", &PyCommunicator::cached_splits)
      .def("reused_blocks", &PyCommunicator::reused_blocks);
}
