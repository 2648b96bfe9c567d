// Registered memory (nvmeof::MemoryRegion), for programs. Declared in the base
// layer (nvmeof/base/memory.hpp): a Transfer hands the transport a region.
#pragma once

#include "nvmeof/base/memory.hpp"
