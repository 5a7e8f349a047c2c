// The thread-local domain state (Note [The thread-local domain state]) and
// thread-affinity calls through pthread_{get,set}affinity_np.
#include "cpu/domains/thread_state.h"

#include <pthread.h>
#include <sched.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "tenferro/cpu/domains/cpu_domain_executor.h"

namespace tenferro::cpu::internal {
namespace {

constexpr int kWordBits = 64;
static_assert(sizeof(cpu_set_t) % sizeof(std::uint64_t) == 0);

}  // namespace

ThreadDomainState& this_thread_domain_state() noexcept {
  thread_local ThreadDomainState state;
  return state;
}

Result<CpuSet> this_thread_affinity() {
  cpu_set_t small;
  int rc = pthread_getaffinity_np(pthread_self(), sizeof(small), &small);
  if (rc == 0) {
    std::uint64_t words[sizeof(cpu_set_t) / sizeof(std::uint64_t)];
    std::memcpy(words, &small, sizeof(small));
    return CpuSet::from_words(words);
  }
  if (rc == EINVAL) {  // more possible CPUs than cpu_set_t holds
    std::vector<std::uint64_t> words(CpuSet::kMaxCpus / kWordBits);
    rc = pthread_getaffinity_np(pthread_self(), words.size() * sizeof(std::uint64_t),
                                reinterpret_cast<cpu_set_t*>(words.data()));
    if (rc == 0) return CpuSet::from_words(words);
  }
  return make_error(ErrorCode::kInternal, ErrorStage::kEnqueue, "pthread_getaffinity_np failed: {}", std::strerror(rc));
}

Status bind_this_thread(const CpuSet& cpus) {
  const std::span<const std::uint64_t> words = cpus.words();
  int rc = 0;
  if (words.size() * sizeof(std::uint64_t) <= sizeof(cpu_set_t)) {
    cpu_set_t small;
    CPU_ZERO(&small);
    std::memcpy(&small, words.data(), words.size_bytes());
    rc = pthread_setaffinity_np(pthread_self(), sizeof(small), &small);
  } else {
    rc = pthread_setaffinity_np(pthread_self(), words.size_bytes(), reinterpret_cast<const cpu_set_t*>(words.data()));
  }
  if (rc != 0) {
    return make_error(ErrorCode::kPlacementError, ErrorStage::kEnqueue, "cannot bind thread to CPUs {}: {}", cpus,
                      std::strerror(rc));
  }
  return ok_status();
}

void release_task(std::shared_ptr<CpuTask>& task) noexcept { task.reset(); }

}  // namespace tenferro::cpu::internal
