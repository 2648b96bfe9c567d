#include "job_facts.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "target_spec.hpp"

namespace nvmeof::engine {
namespace {

std::string quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    char escape[8];
                    std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
                    out += escape;
                } else {
                    out += c;
                }
        }
    }
    return out + "\"";
}

// Appends `"key": value` pairs, comma-separated.
class ObjectWriter {
  public:
    explicit ObjectWriter(std::string& out) : out_(out) { out_ += '{'; }
    void text(std::string_view key, std::string_view value) { raw(key, quoted(value)); }
    void number(std::string_view key, std::uint64_t value) { raw(key, std::to_string(value)); }
    void boolean(std::string_view key, bool value) { raw(key, value ? "true" : "false"); }
    void raw(std::string_view key, const std::string& value) {
        out_ += first_ ? "" : ", ";
        first_ = false;
        out_ += quoted(key) + ": " + value;
    }
    void close() { out_ += '}'; }

  private:
    std::string& out_;
    bool first_ = true;
};

std::string controller_json(const ControllerFacts& c) {
    std::string out;
    ObjectWriter w(out);
    w.text("trtype", c.trtype);
    w.text("traddr", c.traddr);
    w.number("trsvcid", c.trsvcid);
    w.text("subnqn", c.subnqn);
    w.text("hostnqn", c.host_nqn);
    w.number("cntlid", c.cntlid);
    w.text("model", c.model);
    w.text("serial", c.serial);
    w.text("firmware", c.firmware);
    w.number("io_queues", c.io_queues);
    w.number("io_queues_asked", c.io_queues_asked);
    w.number("queue_size", c.queue_size);
    w.number("queue_size_asked", c.queue_size_asked);
    w.number("usable_slots", c.usable_slots);
    w.number("mdts_bytes", c.mdts_bytes);
    w.number("max_transfer_bytes", c.max_transfer_bytes);
    w.number("kas_ms", c.kas_ms);
    w.number("keep_alive_ms", c.keep_alive_ms);
    w.text("source", c.source);
    w.text("rdma_device", c.device);
    w.close();
    return out;
}

std::string namespace_json(const NamespaceFacts& n) {
    std::string out;
    ObjectWriter w(out);
    w.text("file", n.file);
    w.number("controller", n.controller);
    w.number("nsid", n.nsid);
    w.number("size_bytes", n.size_bytes);
    w.number("blocks", n.blocks);
    w.number("lba_size", n.lba_size);
    w.number("metadata_size", n.metadata_size);
    w.number("pi_type", n.pi_type);
    w.text("layout", n.layout);
    w.number("block_bytes", n.block_bytes);
    w.close();
    return out;
}

template <typename T, typename Fn>
std::string array_json(const std::vector<T>& items, Fn each) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) {
        out += (i == 0 ? "" : ", ") + each(items[i]);
    }
    return out + "]";
}

std::string transport_json(const TransportCounters& t) {
    std::string out;
    ObjectWriter w(out);
    w.number("pdus_sent", t.pdus_sent);
    w.number("pdus_received", t.pdus_received);
    w.number("send_calls", t.send_calls);
    w.number("receive_calls", t.receive_calls);
    w.number("bytes_copied", t.bytes_copied);
    w.number("bytes_direct", t.bytes_direct);
    w.close();
    return out;
}

std::string reconnect_json(const ReconnectFacts& c) {
    std::string out;
    ObjectWriter w(out);
    w.text("traddr", c.traddr);
    w.number("trsvcid", c.trsvcid);
    w.text("subnqn", c.subnqn);
    w.text("path", c.path);
    w.number("reconnects", c.reconnects);
    w.number("failed_attempts", c.failed_attempts);
    w.raw("outages_ms",
          array_json(c.outages_ms, [](std::uint64_t ms) { return std::to_string(ms); }));
    w.number("ios_retried", c.ios_retried);
    w.number("ios_failed", c.ios_failed);
    w.number("ana_moves", c.ana_moves);
    w.boolean("lost", c.lost);
    w.text("lost_reason", c.lost_reason);
    w.close();
    return out;
}

int open_or_throw(const std::string& path, int flags) {
    const int fd = ::open(path.c_str(), flags | O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        throw SpecError("info_file=" + path + ": " + std::strerror(errno));
    }
    return fd;
}

}  // namespace

std::string to_json_line(const JobFacts& facts) {
    std::string out;
    ObjectWriter w(out);
    w.text("record", "start");
    w.text("job", facts.job);
    w.number("job_number", facts.job_number);
    w.number("pid", static_cast<std::uint64_t>(facts.pid));
    w.number("iodepth", facts.iodepth);
    w.raw("controllers", array_json(facts.controllers, controller_json));
    w.raw("namespaces", array_json(facts.namespaces, namespace_json));
    w.close();
    return out + "\n";
}

std::string to_json_line(const JobEndFacts& facts) {
    std::string out;
    ObjectWriter w(out);
    w.text("record", "end");
    w.text("job", facts.job);
    w.number("job_number", facts.job_number);
    w.number("pid", static_cast<std::uint64_t>(facts.pid));
    w.raw("reconnect", array_json(facts.controllers, reconnect_json));
    w.raw("transport", transport_json(facts.transport));
    w.close();
    return out + "\n";
}

void append_line(const std::string& path, std::string_view line) {
    const int fd = open_or_throw(path, O_APPEND);
    const ssize_t written = ::write(fd, line.data(), line.size());
    const int error = errno;
    ::close(fd);
    if (written != static_cast<ssize_t>(line.size())) {
        throw SpecError("info_file=" + path + ": " +
                        (written < 0 ? std::strerror(error) : "short write"));
    }
}

void truncate_file(const std::string& path) {
    ::close(open_or_throw(path, O_TRUNC));
}

}  // namespace nvmeof::engine
