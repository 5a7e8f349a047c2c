// Umbrella header of the mpi component (built when MPI is found): the
// Communicator resource, host collectives in place on tensors, and sliced
// einsum over ranks.
#pragma once

#include "tenferro/mpi/collective_provider.h"
#include "tenferro/mpi/collectives.h"
#include "tenferro/mpi/communicator.h"
#include "tenferro/mpi/sliced_einsum.h"
