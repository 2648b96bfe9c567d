#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "job_facts.hpp"
#include "target_spec.hpp"

namespace e = nvmeof::engine;

namespace {

e::JobFacts two_namespaces() {
    e::JobFacts facts;
    facts.job = "multi \"job\"";
    facts.job_number = 3;
    facts.pid = 42;
    facts.iodepth = 16;
    e::ControllerFacts c;
    c.traddr = "::1";
    c.trsvcid = 4420;
    c.subnqn = "nqn.2026-12.io.nvmeof:t";
    c.model = "back\\slash";
    c.serial = "tab\there";
    c.cntlid = 7;
    c.io_queues = 2;
    c.io_queues_asked = 4;
    c.kas_ms = 1000;
    facts.controllers.push_back(c);
    facts.namespaces.push_back({.file = "a",
                                .controller = 0,
                                .nsid = 1,
                                .size_bytes = 4096,
                                .blocks = 8,
                                .lba_size = 512});
    facts.namespaces.push_back({.file = "b",
                                .controller = 0,
                                .nsid = 2,
                                .size_bytes = 8192,
                                .blocks = 2,
                                .lba_size = 4096,
                                .metadata_size = 64,
                                .pi_type = 1,
                                .layout = "data-only",
                                .block_bytes = 4096});
    return facts;
}

}  // namespace

TEST(JobFacts, OneJsonLineWithEscapedText) {
    const std::string line = e::to_json_line(two_namespaces());
    ASSERT_FALSE(line.empty());
    EXPECT_EQ(line.back(), '\n');
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line per record";
    EXPECT_EQ(
        line.rfind(
            R"({"record": "start", "job": "multi \"job\"", "job_number": 3, "pid": 42, "iodepth": 16, )",
            0),
        0u)
        << line;
    EXPECT_NE(line.find(R"("model": "back\\slash", "serial": "tab\there")"), std::string::npos)
        << line;
    EXPECT_NE(
        line.find(
            R"("trtype": "rdma", "traddr": "::1", "trsvcid": 4420, "subnqn": "nqn.2026-12.io.nvmeof:t")"),
        std::string::npos);
    EXPECT_NE(line.find(R"("io_queues": 2, "io_queues_asked": 4)"), std::string::npos);
    EXPECT_NE(line.find(R"({"file": "b", "controller": 0, "nsid": 2, "size_bytes": 8192, )"
                        R"("blocks": 2, "lba_size": 4096, "metadata_size": 64, "pi_type": 1, )"
                        R"("layout": "data-only", "block_bytes": 4096})"),
              std::string::npos)
        << line;
}

TEST(JobFacts, AControllerOverTcpSaysSoAndHasNoRdmaDevice) {
    e::JobFacts facts = two_namespaces();
    facts.controllers[0].trtype = "tcp";
    facts.controllers[0].source = "10.0.0.9";
    const std::string line = e::to_json_line(facts);
    EXPECT_NE(line.find(R"({"trtype": "tcp", "traddr": "::1")"), std::string::npos) << line;
    EXPECT_NE(line.find(R"("source": "10.0.0.9", "rdma_device": "")"), std::string::npos) << line;
}

TEST(JobFacts, AppendsWholeLinesAndTruncates) {
    char path[] = "/tmp/nvmeof-facts-XXXXXX";
    const int fd = mkstemp(path);
    ASSERT_GE(fd, 0);
    close(fd);
    e::append_line(path, "one\n");
    e::append_line(path, "two\n");
    std::ifstream file(path);
    std::ostringstream text;
    text << file.rdbuf();
    EXPECT_EQ(text.str(), "one\ntwo\n");
    e::truncate_file(path);
    std::ifstream emptied(path);
    EXPECT_EQ(emptied.peek(), std::ifstream::traits_type::eof());
    unlink(path);
    try {
        e::append_line("/nonexistent-dir/facts.jsonl", "x\n");
        FAIL() << "an unwritable path was accepted";
    } catch (const e::SpecError& error) {
        EXPECT_EQ(std::string(error.what()).rfind("info_file=/nonexistent-dir/facts.jsonl: ", 0),
                  0u);
    }
}

TEST(JobFacts, EndRecordCarriesEachControllersOutages) {
    e::JobEndFacts facts;
    facts.job = "rr";
    facts.job_number = 2;
    facts.pid = 7;
    e::ReconnectFacts c;
    c.traddr = "10.0.0.2";
    c.trsvcid = 4420;
    c.subnqn = "nqn.x";
    c.path = "10.0.0.3:4420";
    c.reconnects = 2;
    c.failed_attempts = 1;
    c.outages_ms = {1200, 800};
    c.ios_retried = 31;
    c.lost_reason = "said \"no\"";
    facts.controllers.push_back(c);
    facts.transport = {.pdus_sent = 9,
                       .pdus_received = 8,
                       .send_calls = 3,
                       .receive_calls = 2,
                       .bytes_copied = 4096,
                       .bytes_direct = 0};
    const std::string line = e::to_json_line(facts);
    EXPECT_EQ(
        line,
        R"({"record": "end", "job": "rr", "job_number": 2, "pid": 7, "reconnect": [{"traddr": )"
        R"("10.0.0.2", "trsvcid": 4420, "subnqn": "nqn.x", "path": "10.0.0.3:4420", )"
        R"("reconnects": 2, "failed_attempts": 1, "outages_ms": [1200, 800], )"
        R"("ios_retried": 31, "ios_failed": 0, "ana_moves": 0, "lost": false, "lost_reason": "said \"no\""}], )"
        R"("transport": {"pdus_sent": 9, "pdus_received": 8, "send_calls": 3, "receive_calls": 2, )"
        R"("bytes_copied": 4096, "bytes_direct": 0}})"
        "\n");
}
