#include <gtest/gtest.h>

#include "nvmeof/wire.hpp"

namespace w = nvmeof::wire;

TEST(Status, DecodesEveryField) {
    // DNR | More | CRD 2 | SCT 1 | SC 0x82 | phase
    const w::Status s =
        w::Status::from_cqe_field(0x8000 | 0x4000 | 0x2000 | 0x0200 | (0x82 << 1) | 1);
    EXPECT_EQ(s.code(), 0x82);
    EXPECT_EQ(s.type(), w::StatusCodeType::command_specific);
    EXPECT_EQ(s.retry_delay_index(), 2);
    EXPECT_TRUE(s.more());
    EXPECT_TRUE(s.do_not_retry());
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s, w::Status::make(w::StatusCodeType::command_specific, 0x82, true, true, 2));
}

TEST(Status, PhaseBitAndRetryBitsDoNotMakeAFailure) {
    EXPECT_TRUE(w::Status::from_cqe_field(0x0001).ok());
    EXPECT_TRUE(w::Status::from_cqe_field(0x8000).ok());
    EXPECT_FALSE(w::Status::from_cqe_field(0x0002).ok());
}

TEST(Status, NamesDependOnTheCommand) {
    const w::Status sc82 = w::Status::make(w::StatusCodeType::command_specific, 0x82);
    EXPECT_EQ(w::status_name(sc82, {w::kFabricsOpcode, w::QueueKind::admin}),
              "Connect Invalid Parameters");
    EXPECT_EQ(w::status_name(sc82, {0x01, w::QueueKind::io}), "Attempted Write to Read Only Range");
    const w::Status generic82 = w::Status::make(w::StatusCodeType::generic, 0x82);
    EXPECT_EQ(w::status_name(generic82), "Namespace Not Ready");
}

TEST(Status, NamesForEveryStatusCodeType) {
    EXPECT_EQ(w::status_name(w::Status::generic(w::GenericStatus::invalid_field)),
              "Invalid Field in Command");
    EXPECT_EQ(w::status_name(w::Status::generic(w::GenericStatus::lba_out_of_range)),
              "LBA Out of Range");
    EXPECT_EQ(w::status_name(w::Status::generic(w::GenericStatus::keep_alive_timeout_invalid)),
              "Keep Alive Timeout Invalid");
    EXPECT_EQ(w::status_name(w::Status::generic(w::GenericStatus::data_sgl_length_invalid)),
              "Data SGL Length Invalid");
    EXPECT_EQ(w::status_name(w::Status::fabrics(w::FabricsStatus::connect_invalid_host),
                             {w::kFabricsOpcode, w::QueueKind::admin}),
              "Connect Invalid Host");
    EXPECT_EQ(w::status_name(w::Status::make(w::StatusCodeType::media, 0x81)),
              "Unrecovered Read Error");
    EXPECT_EQ(w::status_name(w::Status::make(w::StatusCodeType::path, 0x71)),
              "Command Aborted By Host");
    EXPECT_EQ(w::status_name(w::Status::make(w::StatusCodeType::command_specific, 0x01),
                             {0x09, w::QueueKind::admin}),
              "Invalid Queue Identifier");
    EXPECT_EQ(w::status_name(w::Status::make(w::StatusCodeType::generic, 0x7E)), "Unknown Status");
    EXPECT_EQ(w::status_code_type_name(w::StatusCodeType::media),
              "Media and Data Integrity Errors");
}

TEST(Status, DescribeCarriesCodesAndDnr) {
    EXPECT_EQ(w::describe(w::Status::generic(w::GenericStatus::invalid_field, true)),
              "Invalid Field in Command (SCT 0x0 SC 0x02, DNR)");
}

TEST(Status, RaiseForStatusThrowsWithCommandName) {
    const w::Sqe identify =
        w::identify_command(w::IdentifyCns::controller, 0, w::zero_length_keyed());
    w::Cqe cqe{};
    EXPECT_NO_THROW(w::raise_for_status(cqe, identify, w::QueueKind::admin));
    cqe.status = w::Status::generic(w::GenericStatus::invalid_field, true).cqe_field();
    try {
        w::raise_for_status(cqe, identify, w::QueueKind::admin);
        FAIL() << "no exception";
    } catch (const w::NvmeError& e) {
        EXPECT_EQ(e.command(), "Identify");
        EXPECT_TRUE(e.status().is(w::GenericStatus::invalid_field));
        EXPECT_STREQ(e.what(), "Identify failed: Invalid Field in Command (SCT 0x0 SC 0x02, DNR)");
    }
}

TEST(Status, ConnectErrorCarriesResult) {
    const w::Sqe connect = w::connect_command(0, 32, 0, w::zero_length_keyed());
    w::Cqe cqe{};
    cqe.status = w::Status::fabrics(w::FabricsStatus::connect_invalid_parameters, true).cqe_field();
    cqe.dw0 = w::connect_invalid_parameter_result(true, 256);
    try {
        w::raise_for_status(cqe, connect, w::QueueKind::admin);
        FAIL() << "no exception";
    } catch (const w::NvmeError& e) {
        EXPECT_EQ(e.command(), "Fabrics Connect");
        EXPECT_EQ(w::connect_parameter_name(w::parse_connect_invalid_parameter(e.result())),
                  "SUBNQN");
    }
}

TEST(CommandNames, AdminAndIoOpcodesOverlap) {
    EXPECT_EQ(w::command_name(0x02, w::QueueKind::admin), "Get Log Page");
    EXPECT_EQ(w::command_name(0x02, w::QueueKind::io), "Read");
    EXPECT_EQ(w::command_name(w::property_get_command(w::Property::cap), w::QueueKind::admin),
              "Property Get");
    EXPECT_EQ(
        w::command_name(w::connect_command(1, 8, 0, w::zero_length_keyed()), w::QueueKind::io),
        "Fabrics Connect");
    EXPECT_EQ(w::command_name(0x09, w::QueueKind::io), "Dataset Management");
    EXPECT_EQ(w::command_name(0x55, w::QueueKind::io), "Unknown I/O Command");
}

TEST(Direction, FromOpcodeBits) {
    EXPECT_EQ(w::direction_of(0x01), w::DataDirection::host_to_controller);
    EXPECT_EQ(w::direction_of(0x02), w::DataDirection::controller_to_host);
    EXPECT_EQ(w::direction_of(0x00), w::DataDirection::none);
    EXPECT_EQ(w::direction_of(static_cast<std::uint8_t>(w::FabricsType::connect)),
              w::DataDirection::host_to_controller);
    EXPECT_EQ(w::direction_of(0x06), w::DataDirection::controller_to_host);  // Identify
}
