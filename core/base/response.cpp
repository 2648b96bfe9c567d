#include "nvmeof/base/response.hpp"

namespace nvmeof {

void Response::raise_for_status() const {
    if (status.transport != TransportErrc::none) {
        nvmeof::raise_for_status(status);
    }
    wire::raise_for_status(cqe, command, status.queue);
}

}  // namespace nvmeof
