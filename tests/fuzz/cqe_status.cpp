// Fuzz target: what the host does with a CQE a target sent. Status decoding and
// naming in the command's context, the CID check against outstanding commands,
// and the DW0 results the host decodes (Connect, Number of Queues).
// Input: pool size, CIDs to acquire, an opcode and queue kind for the status
// context, then 16-byte CQEs.
#include <string>

#include "fuzz_bytes.hpp"
#include "host/negotiation.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/wire/admin.hpp"
#include "nvmeof/wire/command.hpp"
#include "nvmeof/wire/fabrics.hpp"
#include "nvmeof/wire/status.hpp"
#include "transport/id_pool.hpp"

namespace wire = nvmeof::wire;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    const auto pool_size = static_cast<std::uint16_t>(1 + in.take<std::uint8_t>());
    nvmeof::detail::IdPool cids(pool_size);
    const unsigned to_acquire = in.take<std::uint8_t>() % (pool_size + 1u);
    for (unsigned i = 0; i < to_acquire; ++i) {
        std::uint16_t cid = 0;
        require(cids.acquire(cid), "a CID pool refused a CID while not full");
    }
    const wire::StatusContext context{in.take<std::uint8_t>(), (in.take<std::uint8_t>() & 1) != 0
                                                                   ? wire::QueueKind::io
                                                                   : wire::QueueKind::admin};
    while (!in.empty()) {
        const auto cqe = in.take<wire::Cqe>();
        const wire::Status status = wire::Status::from_cqe_field(cqe.status);
        require(
            status.ok() == (status.type() == wire::StatusCodeType::generic && status.code() == 0),
            "Status::ok disagrees with SCT/SC");
        require(!wire::status_name(status, context).empty(), "a status without a name");
        const std::string text = wire::describe(status, context);
        require(!text.empty(), "an empty status description");
        (void)wire::status_code_type_name(status.type());

        // A completion is accepted only for an outstanding CID, and only once.
        const std::size_t outstanding = cids.outstanding();
        if (cids.is_outstanding(cqe.command_id)) {
            require(cids.release(cqe.command_id), "an outstanding CID could not be released");
            require(!cids.is_outstanding(cqe.command_id), "a released CID is still outstanding");
            require(cids.outstanding() == outstanding - 1, "release did not free one CID");
        } else {
            require(!cids.release(cqe.command_id), "a CID not outstanding was released");
            require(cids.outstanding() == outstanding, "a refused release changed the pool");
        }

        const wire::ConnectResult connect = wire::parse_connect_result(cqe.dw0);
        (void)connect;
        const auto invalid = wire::parse_connect_invalid_parameter(cqe.dw0);
        require(!wire::connect_parameter_name(invalid).empty(),
                "a Connect parameter without a name");
        try {
            (void)nvmeof::detail::negotiate_io_queue_count(cqe.dw1 & 0xFFFF,
                                                           wire::parse_number_of_queues(cqe.dw0));
        } catch (const nvmeof::ConnectError&) {
            // a target granting no queues is refused with a named error
        }
        const wire::NvmeError error(status, "fuzzed command", context, cqe.dw0);
        require(error.status() == status, "NvmeError changed the status");
    }
    return 0;
}
