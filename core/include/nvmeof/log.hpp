// Where the library's diagnostics go (nvmeof::set_log_sink), for programs.
// Declared in the base layer (nvmeof/base/log.hpp): every layer logs.
#pragma once

#include "nvmeof/base/log.hpp"
