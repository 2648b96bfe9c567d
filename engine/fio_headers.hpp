// fio's headers, included the only way that works from C++ (fio-engine-notes
// §1): <atomic> first, then fio inside extern "C". They are not wrapped in
// extern "C" themselves, and arch/arch.h pulls <atomic> under __cplusplus, which
// must not end up with C linkage.
#pragma once

#include <atomic>

extern "C" {
#include "fio.h"
#include "optgroup.h"
}

// fio's minmax.h defines function-like min/max macros that break every later
// standard header (std::numeric_limits<T>::max()). fio's own inlines above are
// already expanded.
#undef min
#undef max
