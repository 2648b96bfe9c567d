// Fuzz target: a stream of NVMe/TCP PDUs as either side receives it. The first
// byte picks the receiver (host or controller), the digests negotiated, its PDA
// and whether ICReq/ICResp were exchanged; the rest is read PDU by PDU as a
// receiver reads a socket: the 8-byte common header, checked; the whole header
// (and its digest), checked; the data skipped. A fault ends the stream, as it
// ends a connection. Each header is copied into an allocation of exactly its
// length, so ASan sees any read past it.
#include <cstring>
#include <memory>

#include "fuzz_bytes.hpp"
#include "nvmeof/wire/tcp.hpp"

namespace wire = nvmeof::wire;
using nvmeof::fuzz::ByteReader;
using nvmeof::fuzz::require;

namespace {

template <typename T>
T header_as(const std::uint8_t* bytes) {
    T value;
    std::memcpy(&value, bytes, sizeof value);
    return value;
}

// The PDU-specific check of a whole header; a fault or none.
wire::TcpPduFault check_specific(const std::uint8_t* header, const wire::TcpPduExpect& expect,
                                 wire::TcpDigests asked) {
    switch (expect.type) {
        case wire::TcpPduType::ic_req:
            return wire::check_tcp_ic_req(header_as<wire::TcpIcReq>(header));
        case wire::TcpPduType::ic_resp:
            return wire::check_tcp_ic_resp(header_as<wire::TcpIcResp>(header), asked);
        case wire::TcpPduType::h2c_term_req:
        case wire::TcpPduType::c2h_term_req:
            return wire::check_tcp_term_req(header_as<wire::TcpTermReq>(header));
        case wire::TcpPduType::h2c_data: {
            const auto pdu = header_as<wire::TcpDataHeader>(header);
            if (const wire::TcpPduFault fault = wire::check_tcp_data_header(pdu, expect)) {
                return fault;
            }
            // As answering an R2T for the first 16 KiB of a command, none of it in yet.
            return wire::check_tcp_h2c_data_in_r2t(pdu, wire::TcpR2tWindow{0, 16384, 0});
        }
        case wire::TcpPduType::c2h_data:
            return wire::check_tcp_data_header(header_as<wire::TcpDataHeader>(header), expect);
        case wire::TcpPduType::r2t:
            return wire::check_tcp_r2t(header_as<wire::TcpR2t>(header));
        case wire::TcpPduType::capsule_cmd:
        case wire::TcpPduType::capsule_resp:
            return {};
    }
    return {};
}

void require_named(const wire::TcpPduFault& fault) {
    require(fault.why != nullptr && fault.why[0] != '\0', "a fault without a reason");
    require(!wire::tcp_fatal_error_name(static_cast<std::uint16_t>(fault.fes)).empty(),
            "a fault's FES without a name");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    ByteReader in(data, size);
    const auto setup = in.take<std::uint8_t>();
    wire::TcpReceiveState state;
    state.role = (setup & 0x01) != 0 ? wire::TcpRole::controller : wire::TcpRole::host;
    state.digests = wire::TcpDigests{(setup & 0x02) != 0, (setup & 0x04) != 0};
    state.initialized = (setup & 0x08) != 0;
    state.pda = static_cast<std::uint8_t>((setup >> 4) & 0x07);
    state.max_data_bytes = 16384;
    const wire::TcpDigests asked{true, true};

    for (int pdus = 0; pdus < 64 && !in.empty(); ++pdus) {
        const auto ch = in.take<wire::TcpCommonHeader>();
        wire::TcpPduExpect expect;
        const wire::TcpPduFault fault = wire::check_tcp_common_header(ch, state, expect);
        if (fault) {
            require_named(fault);
            require(fault.fei < 8, "a common header fault outside the common header");
            return 0;
        }
        require(expect.header_bytes >= ch.hlen && expect.header_bytes <= expect.plen,
                "a checked header longer than its PDU");
        if (expect.data_bytes != 0 && expect.pdo != 0) {
            require(std::uint64_t{expect.pdo} + expect.data_bytes +
                            (expect.data_digest ? wire::kTcpDigestBytes : 0) ==
                        expect.plen,
                    "data that does not end the PDU");
            require(expect.data_bytes <= state.max_data_bytes, "data over the receiver's limit");
        }
        // The rest of the header, and its digest, in an exact allocation.
        const std::size_t rest = expect.header_bytes - sizeof ch;
        auto header = std::make_unique<std::uint8_t[]>(expect.header_bytes);
        std::memcpy(header.get(), &ch, sizeof ch);
        in.fill(std::span(header.get() + sizeof ch, rest));
        if (expect.header_bytes > ch.hlen) {
            std::uint32_t digest;
            std::memcpy(&digest, header.get() + ch.hlen, sizeof digest);
            // Fuzzed bytes rarely carry the right digest: let the selector's
            // top bit stand for "the digest matched" so the checks behind it run.
            if ((setup & 0x80) == 0) {
                const wire::TcpPduFault bad =
                    wire::tcp_header_digest_fault(header.get(), ch.hlen, digest);
                if (bad) {
                    require_named(bad);
                    return 0;
                }
            }
        }
        const wire::TcpPduFault specific = check_specific(header.get(), expect, asked);
        if (specific) {
            require_named(specific);
            require(specific.fei < ch.hlen, "a header fault outside the header");
            return 0;
        }
        if (expect.type == wire::TcpPduType::ic_req || expect.type == wire::TcpPduType::ic_resp) {
            state.initialized = true;
        }
        // The data (and padding, and data digest): skipped as a receiver
        // places it in the caller's buffer.
        in.take_bytes(expect.plen - expect.header_bytes);
    }
    return 0;
}
