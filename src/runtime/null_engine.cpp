// The null engine (include/tenferro/runtime/spi/null_engine.h).
#include "tenferro/runtime/spi/null_engine.h"

#include <memory>

#include "tenferro/runtime/spi/engine_executor.h"
#include "tenferro/runtime/spi/event_domain.h"

namespace tenferro::runtime {

EngineRegistration null_engine_registration(EngineId id, std::string name) {
  EngineRegistration r;
  r.metadata.id = id;
  r.metadata.name = name;
  r.metadata.hardware = HardwareClass::kReference;
  r.capabilities.elementwise = std::make_shared<NullFamily<ElementwiseRuntime>>(name, "elementwise");
  r.capabilities.reduction = std::make_shared<NullFamily<ReductionRuntime>>(name, "reduction");
  r.capabilities.indexing = std::make_shared<NullFamily<IndexingRuntime>>(name, "indexing");
  r.capabilities.dot_general = std::make_shared<NullFamily<DotGeneralRuntime>>(name, "dot_general");
  r.capabilities.layout = std::make_shared<NullLayout>(name);
  auto executor = std::make_shared<InlineEngineExecutor>();
  r.executor = executor;
  r.event_driver = make_cpu_immediate_event_driver(executor);
  return r;
}

}  // namespace tenferro::runtime
