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

TEST(CompletionStatus, ZoneStatusesAreNamedWithLinuxErrnos) {
    // Each zone status named in one line; the resource errors with their own
    // errno (Linux's BLK_STS_ZONE_OPEN_RESOURCE and _ACTIVE_RESOURCE), the
    // rest EIO as Linux's nvme_error_status leaves them.
    struct Case {
        wire::ZonedStatus code;
        const char* name;
        int error;
    };
    const Case cases[] = {
        {wire::ZonedStatus::zone_boundary_error, "Zone Boundary Error", EIO},
        {wire::ZonedStatus::zone_is_full, "Zone Is Full", EIO},
        {wire::ZonedStatus::zone_is_read_only, "Zone Is Read Only", EIO},
        {wire::ZonedStatus::zone_is_offline, "Zone Is Offline", EIO},
        {wire::ZonedStatus::zone_invalid_write, "Zone Invalid Write", EIO},
        {wire::ZonedStatus::too_many_active_zones, "Too Many Active Zones", EOVERFLOW},
        {wire::ZonedStatus::too_many_open_zones, "Too Many Open Zones", ETOOMANYREFS},
        {wire::ZonedStatus::invalid_zone_state_transition, "Invalid Zone State Transition", EIO},
    };
    for (const Case& c : cases) {
        SCOPED_TRACE(c.name);
        CompletionStatus s;
        s.nvme = wire::Status::zoned(c.code, true);
        s.opcode = static_cast<std::uint8_t>(wire::IoOpcode::write);
        s.queue = wire::QueueKind::io;
        EXPECT_EQ(s.error_number(), c.error);
        const std::string text = describe(s);
        EXPECT_NE(text.find(std::string("Write: ") + c.name + " (SCT 0x1"), std::string::npos)
            << text;
        EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    }
    // The same codes on the admin queue mean nothing zoned.
    CompletionStatus admin;
    admin.nvme = wire::Status::zoned(wire::ZonedStatus::too_many_open_zones);
    admin.queue = wire::QueueKind::admin;
    EXPECT_EQ(admin.error_number(), EIO);
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
