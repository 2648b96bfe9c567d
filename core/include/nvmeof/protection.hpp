// End-to-end data protection in the API's words: a namespace's block layout,
// what a transfer asks of the controller (Protection: PRACT, PRCHK and tags)
// and host-side generation and checking of protection information
// (nvmeof::pi_generate / pi_verify), for programs. Declared in the base layer
// (nvmeof/base/protection.hpp), which the transport builds PRINFO from.
#pragma once

#include "nvmeof/base/protection.hpp"
