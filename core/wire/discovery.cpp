#include "nvmeof/wire/discovery.hpp"

#include <cstring>
#include <stdexcept>

namespace nvmeof::wire {
namespace {

void fill(char* field, std::size_t size, std::string_view text, const char* what) {
    if (!copy_to_field(field, size, text)) {
        throw std::invalid_argument(std::string("discovery entry ") + what + " is too long");
    }
}

}  // namespace

DiscoveryLogEntry discovery_entry(const DiscoveryRecord& record) {
    DiscoveryLogEntry e{};
    e.trtype = static_cast<std::uint8_t>(record.transport);
    e.adrfam = static_cast<std::uint8_t>(record.family);
    e.subtype = static_cast<std::uint8_t>(record.subtype);
    e.treq = record.treq;
    e.portid = record.port_id;
    e.cntlid = record.cntlid;
    e.asqsz = record.admin_queue_size;
    e.eflags = record.eflags;
    fill(e.trsvcid, sizeof e.trsvcid, record.service_id, "TRSVCID");
    fill(e.subnqn, sizeof e.subnqn, record.subsystem_nqn, "SUBNQN");
    fill(e.traddr, sizeof e.traddr, record.address, "TRADDR");
    if (record.transport == TransportType::rdma) {
        e.tsas.qptype = static_cast<std::uint8_t>(record.rdma.qp_type);
        e.tsas.prtype = static_cast<std::uint8_t>(record.rdma.provider_type);
        e.tsas.cms = static_cast<std::uint8_t>(record.rdma.cms);
        e.tsas.pkey = record.rdma.pkey;
    } else if (record.transport == TransportType::tcp) {
        TcpTransportAddress tcp{};
        tcp.sectype = static_cast<std::uint8_t>(record.tcp.security_type);
        std::memcpy(&e.tsas, &tcp, sizeof tcp);
    }
    return e;
}

DiscoveryRecord parse_discovery_entry(const DiscoveryLogEntry& e) {
    DiscoveryRecord r;
    r.transport = static_cast<TransportType>(e.trtype);
    r.family = static_cast<AddressFamily>(e.adrfam);
    r.subtype = static_cast<SubsystemType>(e.subtype);
    r.treq = e.treq;
    r.port_id = e.portid;
    r.cntlid = e.cntlid;
    r.admin_queue_size = e.asqsz;
    r.eflags = e.eflags;
    r.service_id = std::string(field_text(e.trsvcid, sizeof e.trsvcid));
    r.subsystem_nqn = std::string(field_text(e.subnqn, sizeof e.subnqn));
    r.address = std::string(field_text(e.traddr, sizeof e.traddr));
    if (r.transport == TransportType::rdma) {
        r.rdma.qp_type = static_cast<RdmaQpType>(e.tsas.qptype);
        r.rdma.provider_type = static_cast<RdmaProviderType>(e.tsas.prtype);
        r.rdma.cms = static_cast<RdmaCms>(e.tsas.cms);
        r.rdma.pkey = e.tsas.pkey;
    } else {
        r.rdma = {};
    }
    if (r.transport == TransportType::tcp) {
        TcpTransportAddress tcp;
        std::memcpy(&tcp, &e.tsas, sizeof tcp);
        r.tcp.security_type = static_cast<TcpSecurityType>(tcp.sectype);
    }
    return r;
}

DiscoveryLogSummary parse_discovery_log_header(const DiscoveryLogHeader& header) {
    return {header.genctr, header.numrec, header.recfmt};
}

std::vector<std::uint8_t> discovery_log(std::uint64_t generation,
                                        const std::vector<DiscoveryRecord>& records) {
    std::vector<std::uint8_t> log(kDiscoveryRecordSize * (records.size() + 1));
    DiscoveryLogHeader header{};
    header.genctr = generation;
    header.numrec = records.size();
    std::memcpy(log.data(), &header, sizeof header);
    for (std::size_t i = 0; i < records.size(); ++i) {
        const DiscoveryLogEntry entry = discovery_entry(records[i]);
        std::memcpy(log.data() + kDiscoveryRecordSize * (i + 1), &entry, sizeof entry);
    }
    return log;
}

std::vector<DiscoveryRecord> parse_discovery_log(const std::uint8_t* data, std::size_t length) {
    if (length < sizeof(DiscoveryLogHeader)) {
        throw std::runtime_error("discovery log is shorter than its header");
    }
    DiscoveryLogHeader header;
    std::memcpy(&header, data, sizeof header);
    if (header.numrec > (length - sizeof header) / kDiscoveryRecordSize) {
        throw std::runtime_error("discovery log holds fewer records than NUMREC says");
    }
    std::vector<DiscoveryRecord> records;
    for (std::uint64_t i = 0; i < header.numrec; ++i) {
        DiscoveryLogEntry entry;
        std::memcpy(&entry, data + kDiscoveryRecordSize * (i + 1), sizeof entry);
        records.push_back(parse_discovery_entry(entry));
    }
    return records;
}

}  // namespace nvmeof::wire
