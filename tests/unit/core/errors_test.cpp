#include <gtest/gtest.h>

#include <cerrno>

#include "nvmeof/errors.hpp"
#include "nvmeof/wire/io.hpp"

using namespace nvmeof;

TEST(CompletionStatus, DescribesNvmeAndTransportErrors) {
    CompletionStatus s;
    EXPECT_TRUE(s.ok());
    EXPECT_EQ(s.error_number(), 0);
    s.opcode = static_cast<std::uint8_t>(wire::IoOpcode::read);
    s.nvme = wire::Status::generic(wire::GenericStatus::lba_out_of_range, true);
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.error_number(), EIO);
    EXPECT_NE(describe(s).find("Read"), std::string::npos) << describe(s);
    EXPECT_NE(describe(s).find("LBA Out of Range"), std::string::npos) << describe(s);
    EXPECT_THROW(raise_for_status(s), wire::NvmeError);

    CompletionStatus t;
    t.transport = TransportErrc::timeout;
    t.sys_errno = ETIMEDOUT;
    EXPECT_EQ(t.error_number(), ETIMEDOUT);
    EXPECT_NE(describe(t).find("timeout"), std::string::npos);
    try {
        raise_for_status(t);
        FAIL();
    } catch (const TransportError& e) {
        EXPECT_EQ(e.code(), TransportErrc::timeout);
        EXPECT_EQ(e.sys_errno(), ETIMEDOUT);
    }
}

TEST(CompletionStatus, ErrnoTellsMiscompareFromProtectionAndOtherErrors) {
    CompletionStatus s;
    s.nvme =
        wire::Status::make(wire::StatusCodeType::media,
                           static_cast<std::uint8_t>(wire::MediaStatus::compare_failure), true);
    EXPECT_TRUE(s.miscompare());
    EXPECT_EQ(s.error_number(), EBADMSG);
    s.nvme = wire::Status::make(
        wire::StatusCodeType::media,
        static_cast<std::uint8_t>(wire::MediaStatus::end_to_end_guard_check_error), true);
    EXPECT_FALSE(s.miscompare());
    EXPECT_EQ(s.error_number(), EILSEQ);
    s.nvme = wire::Status::make(wire::StatusCodeType::media,
                                static_cast<std::uint8_t>(wire::MediaStatus::write_fault), true);
    EXPECT_EQ(s.error_number(), EIO);
}

TEST(ConnectError, NamesCauseAndStep) {
    const ConnectError e(ConnectFailure::timeout, "waiting for CSTS.RDY", "CSTS.RDY stayed 0");
    EXPECT_EQ(e.cause(), ConnectFailure::timeout);
    EXPECT_EQ(e.step(), "waiting for CSTS.RDY");
    EXPECT_NE(std::string(e.what()).find("timeout at waiting for CSTS.RDY"), std::string::npos)
        << e.what();
    // One hierarchy: everything this library throws itself is an nvmeof::Error.
    EXPECT_TRUE((std::is_base_of_v<Error, ConnectError>));
    EXPECT_TRUE((std::is_base_of_v<Error, TransportError>));
    EXPECT_TRUE((std::is_base_of_v<Error, InvalidArgument>));
}

TEST(ConnectError, ErrorNumberIsTheSystemCallsElseTheCauses) {
    ConnectError::Details d;
    d.sys_errno = ENOMEM;
    EXPECT_EQ(ConnectError(ConnectFailure::device_error, "ibv_reg_mr", "-", d).error_number(),
              ENOMEM);
    EXPECT_EQ(ConnectError(ConnectFailure::device_error, "-", "-").error_number(), ENODEV);
    EXPECT_EQ(ConnectError(ConnectFailure::no_listener, "-", "-").error_number(), ECONNREFUSED);
    EXPECT_EQ(ConnectError(ConnectFailure::timeout, "-", "-").error_number(), ETIMEDOUT);
    EXPECT_EQ(ConnectError(ConnectFailure::address_unreachable, "-", "-").error_number(),
              EHOSTUNREACH);
    EXPECT_EQ(ConnectError(ConnectFailure::invalid_options, "-", "-").error_number(), EINVAL);
    EXPECT_EQ(ConnectError(ConnectFailure::authentication, "-", "-").error_number(), EACCES);
    EXPECT_EQ(ConnectError(ConnectFailure::command_failed, "-", "-").error_number(), EIO);
}
