// The answer to a low-level command (IoQueue::submit(Sqe) → Request::response()).
//
// The base layer's: the transport keeps one in each command slot and fills it
// in place. Programs include nvmeof/queue.hpp.
#pragma once

#include "nvmeof/base/errors.hpp"
#include "nvmeof/wire/command.hpp"

namespace nvmeof {

class Response {
  public:
    wire::Cqe cqe{};
    wire::Sqe command{};
    CompletionStatus status;
    // Throws wire::NvmeError (status of the command) or TransportError.
    void raise_for_status() const;
};

}  // namespace nvmeof
