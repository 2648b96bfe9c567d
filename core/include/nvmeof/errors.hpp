// The library's exceptions (nvmeof::Error, InvalidArgument, ConnectError,
// TransportError; wire::NvmeError for an NVMe status) and a completion's
// status (CompletionStatus), for programs. Declared, with the tree of them,
// in nvmeof/base/errors.hpp: the base layer, below the code that raises them.
#pragma once

#include "nvmeof/base/errors.hpp"
