// Deliberately violates the program boundary (fixture; never compiled).
#include "tenferro/program/semantic_program.h"
#include "tenferro/runtime/runtime.h"
