// Umbrella header of the fft_cpu component: the CPU FFT engine
// (cpu_extension_module) with its FFTW and native providers, over the
// backend-neutral fft component (tenferro/fft.h).
#pragma once

#include "tenferro/fft.h"
#include "tenferro/fft_cpu/cpu_engine.h"
#include "tenferro/fft_cpu/fft_provider.h"
#include "tenferro/fft_cpu/fftw_provider.h"
#include "tenferro/fft_cpu/native_provider.h"
