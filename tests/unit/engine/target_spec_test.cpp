#include <gtest/gtest.h>

#include <string>

#include "target_spec.hpp"

namespace e = nvmeof::engine;

TEST(FilenameSpec, SpdkStyleFilename) {
    const auto spec = e::parse_filename_spec(
        "trtype=RDMA adrfam=IPv4 traddr=192.168.1.10 trsvcid=4421 "
        "subnqn=nqn.2016-06.io.spdk:cnode1 ns=2");
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->address, "192.168.1.10");
    EXPECT_EQ(spec->port, 4421);
    EXPECT_EQ(spec->subsystem_nqn, "nqn.2016-06.io.spdk:cnode1");
    EXPECT_EQ(spec->nsid, 2u);
}

TEST(FilenameSpec, EscapedColonsAndCaseInsensitiveKeys) {
    const auto spec =
        e::parse_filename_spec(R"(TRTYPE=rdma traddr=127.0.0.1 subnqn=nqn.2014-08.org.x\:y)");
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->subsystem_nqn, "nqn.2014-08.org.x:y");
    EXPECT_EQ(spec->port, e::kDefaultPort);
    EXPECT_EQ(spec->nsid, e::kDefaultNsid);
}

TEST(FilenameSpec, PlainFilenameIsNotASpec) {
    EXPECT_FALSE(e::parse_filename_spec("nvmeof0").has_value());
}

TEST(FilenameSpec, RejectsWhatItCannotServe) {
    EXPECT_THROW(e::parse_filename_spec("trtype=FC traddr=1.2.3.4"), e::SpecError);
    EXPECT_THROW(e::parse_filename_spec("trtype=PCIe traddr=0000.04.00.0"), e::SpecError);
    EXPECT_THROW(e::parse_filename_spec("adrfam=IB traddr=::1"), e::SpecError);
    EXPECT_EQ(e::parse_filename_spec("adrfam=IPv6 traddr=::1")->address, "::1");
    EXPECT_THROW(e::parse_filename_spec("traddr=1.2.3.4 trsvcid=70000"), e::SpecError);
    EXPECT_THROW(e::parse_filename_spec("traddr=1.2.3.4 ns=0"), e::SpecError);
    EXPECT_THROW(e::parse_filename_spec("traddr=1.2.3.4 bogus=1"), e::SpecError);
    EXPECT_THROW(e::parse_filename_spec("traddr=1.2.3.4 =x"), e::SpecError);
}

TEST(ResolveTarget, OptionsWinOverFilename) {
    e::OptionValues options;
    options.traddr = "127.0.0.2";
    options.nsid = "3";
    const e::TargetSpec spec =
        e::resolve_target(options, "traddr=10.0.0.1 trsvcid=4425 subnqn=nqn.a:b");
    EXPECT_EQ(spec.address, "127.0.0.2");
    EXPECT_EQ(spec.port, 4425);
    EXPECT_EQ(spec.nsid, 3u);
    EXPECT_EQ(spec.subsystem_nqn, "nqn.a:b");
}

TEST(ResolveTarget, EmptyValuesMeanDefaultOrNameTheMissingOption) {
    e::OptionValues options;
    options.traddr = "127.0.0.1";
    options.subnqn = "nqn.test";
    options.trsvcid = "";  // an unset ${NVMEOF_PORT}
    EXPECT_EQ(e::resolve_target(options, "").port, 4420);
    options.traddr = "";
    EXPECT_THROW(e::resolve_target(options, "nvmeof0"), e::SpecError);
    options.traddr = "127.0.0.1";
    options.trsvcid = "44x";
    EXPECT_THROW(e::resolve_target(options, ""), e::SpecError);
}

TEST(ResolveTarget, CanonicalFilename) {
    e::OptionValues options;
    options.traddr = "127.0.0.1";
    options.subnqn = "nqn.t";
    EXPECT_EQ(e::canonical_filename(e::resolve_target(options, "")),
              "traddr=127.0.0.1 trsvcid=4420 subnqn=nqn.t ns=1");
}

TEST(FilenameSpec, EmptyValuesMeanDefault) {
    // An unset ${NVMEOF_TRSVCID} in an SPDK-style filename.
    const auto spec =
        e::parse_filename_spec("trtype=RDMA traddr=10.0.0.1 trsvcid= subnqn=nqn.a ns=");
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->port, e::kDefaultPort);
    EXPECT_EQ(spec->nsid, e::kDefaultNsid);
    EXPECT_THROW(e::parse_filename_spec("traddr=10.0.0.1 bogus="), e::SpecError);
}

TEST(FilenameSpec, SpdkHostaddrIsTheSource) {
    const auto spec = e::parse_filename_spec("traddr=10.0.0.1 hostaddr=10.0.0.9 subnqn=nqn.a");
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->source, "10.0.0.9");
}

TEST(Ipv6, PlainAndBracketedAddresses) {
    // In a filename fio has already turned "\:" into ':'; the engine also
    // accepts the escapes left in.
    for (const char* filename :
         {"adrfam=IPv6 traddr=::1 subnqn=nqn.a", R"(traddr=\:\:1 subnqn=nqn.a)",
          "traddr=[::1] subnqn=nqn.a", R"(traddr=[\:\:1] subnqn=nqn.a)"}) {
        const auto spec = e::parse_filename_spec(filename);
        ASSERT_TRUE(spec.has_value()) << filename;
        EXPECT_EQ(spec->address, "::1") << filename;
        EXPECT_EQ(spec->port, e::kDefaultPort) << filename;
    }
    const auto with_port = e::parse_filename_spec("traddr=[fe80::2]:4421 subnqn=nqn.a");
    ASSERT_TRUE(with_port.has_value());
    EXPECT_EQ(with_port->address, "fe80::2");
    EXPECT_EQ(with_port->port, 4421);
    // An explicit trsvcid wins over the bracket's port, in either order.
    EXPECT_EQ(e::parse_filename_spec("trsvcid=4430 traddr=[::1]:4421")->port, 4430);
    EXPECT_EQ(e::parse_filename_spec("traddr=[::1]:4421 trsvcid=4430")->port, 4430);
}

TEST(Ipv6, TraddrOption) {
    e::OptionValues options;
    options.subnqn = "nqn.2026-12.io.nvmeof:t";
    options.traddr = "::1";
    EXPECT_EQ(e::resolve_target(options, "").address, "::1");
    options.traddr = "[::1]";
    EXPECT_EQ(e::resolve_target(options, "").address, "::1");
    options.traddr = "[::1]:4500";
    EXPECT_EQ(e::resolve_target(options, "").port, 4500);
    options.trsvcid = "4501";
    EXPECT_EQ(e::resolve_target(options, "").port, 4501);
    EXPECT_EQ(e::canonical_filename(e::resolve_target(options, "")),
              "traddr=[::1] trsvcid=4501 subnqn=nqn.2026-12.io.nvmeof:t ns=1");
}

TEST(Paths, TraddrListsSeveralPathsEachWithAnOptionalPort) {
    e::OptionValues options;
    options.subnqn = "nqn.2026-12.io.nvmeof:t";
    options.traddr = "10.0.0.2,10.0.0.3:4421,[fd00::2]:4422,::1";
    EXPECT_EQ(e::resolve_target(options, "").address, "10.0.0.2,10.0.0.3:4421,[fd00::2]:4422,::1");
    options.traddr = "127.0.0.1:4425";  // one IPv4 path with its port: passed on as a path
    EXPECT_EQ(e::resolve_target(options, "").address, "127.0.0.1:4425");
    for (const char* bad :
         {"10.0.0.2,", ",10.0.0.2", "10.0.0.2,,10.0.0.3", "10.0.0.2:0,10.0.0.3", "10.0.0.2,[::1"}) {
        options.traddr = bad;
        try {
            e::resolve_target(options, "");
            FAIL() << bad << " was accepted";
        } catch (const e::SpecError& error) {
            EXPECT_EQ(std::string(error.what()).rfind("traddr", 0), 0u) << error.what();
        }
    }
    // The filename form: a list, or traddr= repeated.
    EXPECT_EQ(e::parse_filename_spec("traddr=10.0.0.2 traddr=10.0.0.3 subnqn=nqn.a")->address,
              "10.0.0.2,10.0.0.3");
    EXPECT_EQ(e::parse_filename_spec("traddr=10.0.0.2,10.0.0.3\\:4421 subnqn=nqn.a")->address,
              "10.0.0.2,10.0.0.3:4421");
    // One IPv4 path with its port stays a path, its port its own, in either form.
    EXPECT_EQ(e::parse_filename_spec("traddr=10.0.0.2:4421 subnqn=nqn.a")->address,
              "10.0.0.2:4421");
}

TEST(Ipv6, MalformedBracketsNameTheOption) {
    for (const char* bad : {"[::1", "[]", "[::1]4420", "[::1]:", "[::1]:70000", "::1]"}) {
        try {
            e::parse_address(bad, "traddr");
            FAIL() << bad << " was accepted";
        } catch (const e::SpecError& error) {
            EXPECT_EQ(std::string(error.what()).rfind("traddr", 0), 0u) << error.what();
        }
    }
}

TEST(ControllerKey, SameTargetAndSubsystemShareOneController) {
    const auto a = *e::parse_filename_spec("traddr=10.0.0.1 subnqn=nqn.a ns=1");
    const auto b = *e::parse_filename_spec("traddr=10.0.0.1 subnqn=nqn.a ns=2");
    const auto c = *e::parse_filename_spec("traddr=10.0.0.1 subnqn=nqn.b ns=1");
    const auto d = *e::parse_filename_spec("traddr=10.0.0.1 trsvcid=4421 subnqn=nqn.a ns=1");
    EXPECT_EQ(e::controller_key(a), e::controller_key(b));
    EXPECT_NE(e::controller_key(a), e::controller_key(c));
    EXPECT_NE(e::controller_key(a), e::controller_key(d));
}

TEST(DiscoverySpec, NoSubnqnOrTheDiscoveryNqnNamesADiscoveryService) {
    e::OptionValues options;
    options.traddr = "127.0.0.1";
    options.subnqn = "";  // an unset ${NVMEOF_SUBNQN}
    const e::TargetSpec from_options = e::resolve_target(options, "");
    EXPECT_TRUE(e::is_discovery_spec(from_options));
    EXPECT_EQ(from_options.address, "127.0.0.1");
    EXPECT_EQ(from_options.port, e::kDefaultPort);

    options.subnqn = "nqn.2014-08.org.nvmexpress.discovery";
    EXPECT_TRUE(e::is_discovery_spec(e::resolve_target(options, "")));
    options.subnqn = "nqn.2014-08.org.nvmexpress.discovery.other";
    EXPECT_FALSE(e::is_discovery_spec(e::resolve_target(options, "")));

    const e::TargetSpec from_filename =
        e::resolve_target({}, "trtype=RDMA adrfam=IPv4 traddr=10.0.0.1 trsvcid=4430 ns=2");
    EXPECT_TRUE(e::is_discovery_spec(from_filename));
    EXPECT_EQ(from_filename.port, 4430);
    EXPECT_EQ(from_filename.nsid, 2u);
    EXPECT_TRUE(e::is_discovery_spec(
        e::resolve_target({}, R"(traddr=10.0.0.1 subnqn=nqn.2014-08.org.nvmexpress.discovery)")));
    // The address is still required: it is where the discovery service is.
    EXPECT_THROW(e::resolve_target({}, "trsvcid=4420"), e::SpecError);
}

TEST(DiscoverySpec, OptionSubnqnMakesAFilenameSpecConcrete) {
    e::OptionValues options;
    options.subnqn = "nqn.2026-12.io.nvmeof:a";
    EXPECT_FALSE(e::is_discovery_spec(e::resolve_target(options, "traddr=10.0.0.1")));
}

TEST(ResolveTarget, CanonicalFilenameCarriesTheHostIdentityWhenSet) {
    e::TargetSpec spec;
    spec.address = "10.0.0.1";
    spec.subsystem_nqn = "nqn.2026-12.io.nvmeof:a";
    spec.host_nqn = "nqn.2026-12.io.nvmeof:host";
    spec.source = "10.0.0.9";
    const std::string name = e::canonical_filename(spec);
    EXPECT_EQ(name,
              "traddr=10.0.0.1 trsvcid=4420 subnqn=nqn.2026-12.io.nvmeof:a ns=1 "
              "hostnqn=nqn.2026-12.io.nvmeof:host host_traddr=10.0.0.9");
    const auto back = e::parse_filename_spec(name);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(e::controller_key(*back), e::controller_key(spec));
}

// NVMe/TCP: SPDK's filename form with trtype=TCP, fio's trtype option, and the
// ports nvme-cli defaults (4420 for an I/O controller, 8009 for discovery).
TEST(Transport, FilenameTrtypeTcpInAnyCase) {
    const auto spec = e::parse_filename_spec(
        R"(trtype=TCP adrfam=IPv4 traddr=192.168.1.10 trsvcid=4420 subnqn=nqn.2016-06.io.spdk\:cnode1 ns=1)");
    ASSERT_TRUE(spec.has_value());
    EXPECT_EQ(spec->transport, nvmeof::Transport::tcp);
    EXPECT_EQ(spec->address, "192.168.1.10");
    EXPECT_EQ(spec->port, 4420);
    EXPECT_EQ(spec->subsystem_nqn, "nqn.2016-06.io.spdk:cnode1");
    for (const char* name : {"tcp", "Tcp", "TCP"}) {
        EXPECT_EQ(
            e::parse_filename_spec(std::string("trtype=") + name + " traddr=10.0.0.1 subnqn=nqn.a")
                ->transport,
            nvmeof::Transport::tcp)
            << name;
    }
    for (const char* name : {"rdma", "RDMA"}) {
        EXPECT_EQ(
            e::parse_filename_spec(std::string("trtype=") + name + " traddr=10.0.0.1 subnqn=nqn.a")
                ->transport,
            nvmeof::Transport::rdma)
            << name;
    }
    // No trtype: RDMA, as before; an empty one (an unset ${VAR}) too.
    EXPECT_EQ(e::parse_filename_spec("traddr=10.0.0.1 subnqn=nqn.a")->transport,
              nvmeof::Transport::rdma);
    EXPECT_EQ(e::parse_filename_spec("trtype= traddr=10.0.0.1 subnqn=nqn.a")->transport,
              nvmeof::Transport::rdma);
}

TEST(Transport, AnotherTrtypeIsOneLineNamingIt) {
    for (const char* filename : {"trtype=FC traddr=1.2.3.4 subnqn=nqn.a", "trtype=loop traddr=x"}) {
        try {
            e::parse_filename_spec(filename);
            FAIL() << filename << " accepted";
        } catch (const e::SpecError& error) {
            const std::string what = error.what();
            EXPECT_EQ(what.rfind("filename trtype=", 0), 0u) << what;
            EXPECT_NE(what.find("RDMA or TCP"), std::string::npos) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        }
    }
    e::OptionValues options;
    options.traddr = "10.0.0.1";
    options.trtype = "roce";
    try {
        e::resolve_target(options, "");
        FAIL() << "trtype=roce accepted";
    } catch (const e::SpecError& error) {
        EXPECT_EQ(std::string(error.what()).rfind("trtype=roce: ", 0), 0u) << error.what();
    }
}

TEST(Transport, TheOptionWinsOverTheFilenameAndEmptyMeansTheFilenamesOrRdma) {
    e::OptionValues options;
    options.subnqn = "nqn.a";
    options.trtype = "TCP";
    EXPECT_EQ(e::resolve_target(options, "traddr=10.0.0.1").transport, nvmeof::Transport::tcp);
    options.trtype = "rdma";
    EXPECT_EQ(e::resolve_target(options, "trtype=TCP traddr=10.0.0.1").transport,
              nvmeof::Transport::rdma);
    options.trtype = "";  // an unset ${VAR}
    EXPECT_EQ(e::resolve_target(options, "trtype=TCP traddr=10.0.0.1").transport,
              nvmeof::Transport::tcp);
    options.traddr = "10.0.0.1";
    EXPECT_EQ(e::resolve_target(options, "").transport, nvmeof::Transport::rdma);
}

TEST(Transport, PortDefaultsAsNvmeCli) {
    e::OptionValues options;
    options.traddr = "10.0.0.1";
    options.trtype = "tcp";
    // A discovery service over TCP: 8009 unless a port is given.
    EXPECT_EQ(e::resolve_target(options, "").port, 8009);
    EXPECT_EQ(e::parse_filename_spec("trtype=TCP traddr=10.0.0.1")->port, 8009);
    EXPECT_EQ(e::resolve_target({}, "trtype=TCP traddr=10.0.0.1 trsvcid=").port, 8009);
    EXPECT_EQ(e::resolve_target({}, "trtype=TCP traddr=10.0.0.1 trsvcid=4420").port, 4420);
    EXPECT_EQ(e::resolve_target({}, "trtype=TCP traddr=[\\:\\:1]\\:4430").port, 4430);
    options.trsvcid = "4421";
    EXPECT_EQ(e::resolve_target(options, "").port, 4421);
    options.trsvcid = "";
    options.traddr = "[::1]:4431";
    EXPECT_EQ(e::resolve_target(options, "").port, 4431);
    options.traddr = "10.0.0.1";
    options.subnqn = "nqn.2014-08.org.nvmexpress.discovery";
    EXPECT_EQ(e::resolve_target(options, "").port, 8009);
    // An I/O controller over TCP, and anything over RDMA: 4420.
    options.subnqn = "nqn.a";
    EXPECT_EQ(e::resolve_target(options, "").port, 4420);
    EXPECT_EQ(e::resolve_target({}, "trtype=TCP traddr=10.0.0.1 subnqn=nqn.a").port, 4420);
    options.trtype = "rdma";
    options.subnqn = "";
    EXPECT_EQ(e::resolve_target(options, "").port, 4420);
    // The option's subnqn makes the filename's TCP discovery spec an I/O controller's.
    e::OptionValues subnqn_only;
    subnqn_only.subnqn = "nqn.a";
    EXPECT_EQ(e::resolve_target(subnqn_only, "trtype=TCP traddr=10.0.0.1").port, 4420);
}

TEST(Transport, RdmaAndTcpToOneAddressAreTwoControllers) {
    const auto rdma = *e::parse_filename_spec("traddr=10.0.0.1 subnqn=nqn.a ns=1");
    const auto tcp = *e::parse_filename_spec("trtype=TCP traddr=10.0.0.1 subnqn=nqn.a ns=1");
    const auto tcp2 = *e::parse_filename_spec("trtype=tcp traddr=10.0.0.1 subnqn=nqn.a ns=2");
    EXPECT_EQ(rdma.port, tcp.port);
    EXPECT_NE(e::controller_key(rdma), e::controller_key(tcp));
    EXPECT_EQ(e::controller_key(tcp), e::controller_key(tcp2));
}

TEST(Transport, CanonicalFilenameCarriesTcpAndReadsBack) {
    e::TargetSpec spec;
    spec.transport = nvmeof::Transport::tcp;
    spec.address = "fe80::2";
    spec.port = 4421;
    spec.subsystem_nqn = "nqn.2026-12.io.nvmeof:a";
    const std::string name = e::canonical_filename(spec);
    EXPECT_EQ(name, "trtype=TCP traddr=[fe80::2] trsvcid=4421 subnqn=nqn.2026-12.io.nvmeof:a ns=1");
    const auto back = e::parse_filename_spec(name);
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(back->transport, nvmeof::Transport::tcp);
    EXPECT_EQ(e::controller_key(*back), e::controller_key(spec));
    spec.transport = nvmeof::Transport::rdma;  // RDMA's names are as they were
    EXPECT_EQ(e::canonical_filename(spec).rfind("traddr=[fe80::2] trsvcid=4421", 0), 0u);
}
