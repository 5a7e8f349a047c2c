// Umbrella header of the engine SPI: the interfaces a backend implements to
// plug into a Runtime, apart from the user API (tenferro/runtime.h).
//
//   spi/engine.h           EngineRegistration: metadata, the typed core
//                          capability slots, allocator, cache owner
//   spi/providers.h        the core family interfaces (prepare + run) and
//                          the signatures and requests they receive
//   spi/extension.h        extension engines and modules (einsum, linalg,
//                          fft, ... for an engine id)
//   spi/engine_executor.h  the executable witness that enters the engine's
//                          execution context
//   spi/event_domain.h     event domains and their drivers (completion,
//                          cross-engine waits)
//   spi/transfer.h         transfers between storage domains
//   spi/collective.h       collective providers (one per communicator)
//   spi/null_engine.h      a complete engine that supports nothing: the
//                          skeleton a new backend starts from
//
// docs/engines.md walks through writing an engine.
#pragma once

#include "tenferro/runtime/spi/collective.h"
#include "tenferro/runtime/spi/engine.h"
#include "tenferro/runtime/spi/engine_executor.h"
#include "tenferro/runtime/spi/event_domain.h"
#include "tenferro/runtime/spi/extension.h"
#include "tenferro/runtime/spi/null_engine.h"
#include "tenferro/runtime/spi/providers.h"
#include "tenferro/runtime/spi/transfer.h"
