// Two independent definitions of the same wire structures must agree: ours and
// libnvme's <nvme/types.h>. Wherever libnvme defines a structure, constant or
// status code this project also defines, compare sizes, offsets and values.
#include <gtest/gtest.h>

#include <cstddef>

extern "C" {
#include <nvme/types.h>
}

#include "nvmeof/wire.hpp"

namespace w = nvmeof::wire;

#define EXPECT_SAME_FIELD(ours, theirs, ours_field, theirs_field)             \
    do {                                                                      \
        EXPECT_EQ(offsetof(ours, ours_field), offsetof(theirs, theirs_field)) \
            << #ours "::" #ours_field " vs " #theirs "::" #theirs_field;      \
        EXPECT_EQ(sizeof(ours::ours_field), sizeof(theirs::theirs_field))     \
            << "size of " #ours "::" #ours_field;                             \
    } while (0)

TEST(LibnvmeCrossCheck, IdentifyController) {
    using O = w::IdentifyController;
    using T = nvme_id_ctrl;
    EXPECT_EQ(sizeof(O), sizeof(T));
    EXPECT_SAME_FIELD(O, T, vid, vid);
    EXPECT_SAME_FIELD(O, T, sn, sn);
    EXPECT_SAME_FIELD(O, T, mn, mn);
    EXPECT_SAME_FIELD(O, T, fr, fr);
    EXPECT_SAME_FIELD(O, T, cmic, cmic);
    EXPECT_SAME_FIELD(O, T, mdts, mdts);
    EXPECT_SAME_FIELD(O, T, cntlid, cntlid);
    EXPECT_SAME_FIELD(O, T, ver, ver);
    EXPECT_SAME_FIELD(O, T, rtd3e, rtd3e);
    EXPECT_SAME_FIELD(O, T, oaes, oaes);
    EXPECT_SAME_FIELD(O, T, ctratt, ctratt);
    EXPECT_SAME_FIELD(O, T, cntrltype, cntrltype);
    EXPECT_SAME_FIELD(O, T, fguid, fguid);
    EXPECT_EQ(offsetof(O, crdt), offsetof(T, crdt1));
    EXPECT_SAME_FIELD(O, T, oacs, oacs);
    EXPECT_SAME_FIELD(O, T, lpa, lpa);
    EXPECT_SAME_FIELD(O, T, npss, npss);
    EXPECT_SAME_FIELD(O, T, kas, kas);
    EXPECT_SAME_FIELD(O, T, sqes, sqes);
    EXPECT_SAME_FIELD(O, T, cqes, cqes);
    EXPECT_SAME_FIELD(O, T, maxcmd, maxcmd);
    EXPECT_SAME_FIELD(O, T, nn, nn);
    EXPECT_SAME_FIELD(O, T, oncs, oncs);
    EXPECT_SAME_FIELD(O, T, fuses, fuses);
    EXPECT_SAME_FIELD(O, T, vwc, vwc);
    EXPECT_SAME_FIELD(O, T, ocfs, ocfs);
    EXPECT_SAME_FIELD(O, T, sgls, sgls);
    EXPECT_SAME_FIELD(O, T, mnan, mnan);
    EXPECT_SAME_FIELD(O, T, subnqn, subnqn);
    EXPECT_SAME_FIELD(O, T, ioccsz, ioccsz);
    EXPECT_SAME_FIELD(O, T, iorcsz, iorcsz);
    EXPECT_SAME_FIELD(O, T, icdoff, icdoff);
    EXPECT_SAME_FIELD(O, T, fcatt, fcatt);
    EXPECT_SAME_FIELD(O, T, msdbd, msdbd);
    EXPECT_SAME_FIELD(O, T, ofcs, ofcs);
    EXPECT_SAME_FIELD(O, T, dctype, dctype);
    EXPECT_EQ(offsetof(O, psd), offsetof(T, psd));
    EXPECT_EQ(offsetof(O, vendor_specific), offsetof(T, vs));
}

TEST(LibnvmeCrossCheck, IdentifyNamespace) {
    using O = w::IdentifyNamespace;
    using T = nvme_id_ns;
    EXPECT_EQ(sizeof(O), sizeof(T));
    EXPECT_SAME_FIELD(O, T, nsze, nsze);
    EXPECT_SAME_FIELD(O, T, ncap, ncap);
    EXPECT_SAME_FIELD(O, T, nuse, nuse);
    EXPECT_SAME_FIELD(O, T, nsfeat, nsfeat);
    EXPECT_SAME_FIELD(O, T, nlbaf, nlbaf);
    EXPECT_SAME_FIELD(O, T, flbas, flbas);
    EXPECT_SAME_FIELD(O, T, dps, dps);
    EXPECT_SAME_FIELD(O, T, nmic, nmic);
    EXPECT_SAME_FIELD(O, T, noiob, noiob);
    EXPECT_SAME_FIELD(O, T, nvmcap, nvmcap);
    EXPECT_SAME_FIELD(O, T, nguid, nguid);
    EXPECT_SAME_FIELD(O, T, eui64, eui64);
    EXPECT_SAME_FIELD(O, T, lbaf, lbaf);
    EXPECT_EQ(sizeof(w::LbaFormat), sizeof(nvme_lbaf));
    EXPECT_EQ(offsetof(w::LbaFormat, ms), offsetof(nvme_lbaf, ms));
    EXPECT_EQ(offsetof(w::LbaFormat, lbads), offsetof(nvme_lbaf, ds));
    EXPECT_EQ(offsetof(w::LbaFormat, rp), offsetof(nvme_lbaf, rp));
}

TEST(LibnvmeCrossCheck, ConnectData) {
    using O = w::ConnectData;
    using T = nvmf_connect_data;
    EXPECT_EQ(sizeof(O), sizeof(T));
    EXPECT_SAME_FIELD(O, T, host_id, hostid);
    EXPECT_SAME_FIELD(O, T, cntlid, cntlid);
    EXPECT_SAME_FIELD(O, T, subnqn, subsysnqn);
    EXPECT_SAME_FIELD(O, T, hostnqn, hostnqn);
    EXPECT_EQ(w::kNqnFieldSize, std::size_t{NVME_NQN_LENGTH});
}

TEST(LibnvmeCrossCheck, DiscoveryLog) {
    using O = w::DiscoveryLogEntry;
    using T = nvmf_disc_log_entry;
    EXPECT_EQ(sizeof(O), sizeof(T));
    EXPECT_SAME_FIELD(O, T, trtype, trtype);
    EXPECT_SAME_FIELD(O, T, adrfam, adrfam);
    EXPECT_SAME_FIELD(O, T, subtype, subtype);
    EXPECT_SAME_FIELD(O, T, treq, treq);
    EXPECT_SAME_FIELD(O, T, portid, portid);
    EXPECT_SAME_FIELD(O, T, cntlid, cntlid);
    EXPECT_SAME_FIELD(O, T, asqsz, asqsz);
    EXPECT_SAME_FIELD(O, T, eflags, eflags);
    EXPECT_SAME_FIELD(O, T, trsvcid, trsvcid);
    EXPECT_SAME_FIELD(O, T, subnqn, subnqn);
    EXPECT_SAME_FIELD(O, T, traddr, traddr);
    EXPECT_EQ(offsetof(O, tsas), offsetof(T, tsas));
    EXPECT_EQ(offsetof(O, tsas) + offsetof(w::RdmaTransportAddress, pkey),
              offsetof(T, tsas.rdma.pkey));
    EXPECT_EQ(offsetof(O, tsas) + offsetof(w::RdmaTransportAddress, qptype),
              offsetof(T, tsas.rdma.qptype));
    EXPECT_EQ(offsetof(O, tsas) + offsetof(w::RdmaTransportAddress, prtype),
              offsetof(T, tsas.rdma.prtype));
    EXPECT_EQ(offsetof(O, tsas) + offsetof(w::RdmaTransportAddress, cms),
              offsetof(T, tsas.rdma.cms));
    EXPECT_EQ(offsetof(O, tsas) + offsetof(w::TcpTransportAddress, sectype),
              offsetof(T, tsas.tcp.sectype));
    EXPECT_EQ(static_cast<int>(w::TcpSecurityType::none), NVMF_TCP_SECTYPE_NONE);
    EXPECT_EQ(static_cast<int>(w::TcpSecurityType::tls), NVMF_TCP_SECTYPE_TLS);
    EXPECT_EQ(static_cast<int>(w::TcpSecurityType::tls13), NVMF_TCP_SECTYPE_TLS13);
    EXPECT_EQ(static_cast<int>(w::AddressFamily::ipv6), NVMF_ADDR_FAMILY_IP6);
    EXPECT_EQ(static_cast<int>(w::SubsystemType::nvm), NVME_NQN_NVME);
    EXPECT_EQ(static_cast<int>(w::SubsystemType::current_discovery), NVME_NQN_CURR);
    EXPECT_EQ(w::kTreqSecureChannelNotRequired, NVMF_TREQ_NOT_REQUIRED);
    EXPECT_EQ(w::kTreqSqFlowControlDisable, NVMF_TREQ_DISABLE_SQFLOW);
    EXPECT_EQ(w::kEflagsDuplicateInformation, NVMF_DISC_EFLAGS_DUPRETINFO);
    EXPECT_EQ(w::kEflagsExplicitPersistentConnections, NVMF_DISC_EFLAGS_EPCSD);
    EXPECT_EQ(w::kEflagsNoCdcConnectivity, NVMF_DISC_EFLAGS_NCC);
    EXPECT_EQ(offsetof(w::DiscoveryLogHeader, genctr), offsetof(nvmf_discovery_log, genctr));
    EXPECT_EQ(offsetof(w::DiscoveryLogHeader, numrec), offsetof(nvmf_discovery_log, numrec));
    EXPECT_EQ(offsetof(w::DiscoveryLogHeader, recfmt), offsetof(nvmf_discovery_log, recfmt));
    EXPECT_EQ(sizeof(w::DiscoveryLogHeader), offsetof(nvmf_discovery_log, entries));
    EXPECT_EQ(static_cast<int>(w::TransportType::rdma), NVMF_TRTYPE_RDMA);
    EXPECT_EQ(static_cast<int>(w::RdmaQpType::reliable_connected), NVMF_RDMA_QPTYPE_CONNECTED);
    EXPECT_EQ(static_cast<int>(w::RdmaProviderType::roce_v2), NVMF_RDMA_PRTYPE_ROCEV2);
    EXPECT_EQ(static_cast<int>(w::RdmaCms::rdma_cm), NVMF_RDMA_CMS_RDMA_CM);
}

TEST(LibnvmeCrossCheck, SmallStructures) {
    EXPECT_EQ(sizeof(w::DsmRange), sizeof(nvme_dsm_range));
    EXPECT_EQ(offsetof(w::DsmRange, context_attributes), offsetof(nvme_dsm_range, cattr));
    EXPECT_EQ(offsetof(w::DsmRange, length_blocks), offsetof(nvme_dsm_range, nlb));
    EXPECT_EQ(offsetof(w::DsmRange, slba), offsetof(nvme_dsm_range, slba));
    EXPECT_EQ(sizeof(w::NamespaceIdDescriptorHeader), sizeof(nvme_ns_id_desc));
    EXPECT_EQ(offsetof(w::NamespaceIdDescriptorHeader, nidl), offsetof(nvme_ns_id_desc, nidl));
    EXPECT_EQ(static_cast<int>(w::NamespaceIdType::uuid), NVME_NIDT_UUID);
    EXPECT_EQ(static_cast<int>(w::NamespaceIdType::csi), NVME_NIDT_CSI);
}

TEST(LibnvmeCrossCheck, Opcodes) {
    EXPECT_EQ(static_cast<int>(w::AdminOpcode::get_log_page), nvme_admin_get_log_page);
    EXPECT_EQ(static_cast<int>(w::AdminOpcode::identify), nvme_admin_identify);
    EXPECT_EQ(static_cast<int>(w::AdminOpcode::set_features), nvme_admin_set_features);
    EXPECT_EQ(static_cast<int>(w::AdminOpcode::get_features), nvme_admin_get_features);
    EXPECT_EQ(static_cast<int>(w::AdminOpcode::keep_alive), nvme_admin_keep_alive);
    EXPECT_EQ(static_cast<int>(w::AdminOpcode::fabrics), nvme_admin_fabrics);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::flush), nvme_cmd_flush);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::write), nvme_cmd_write);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::read), nvme_cmd_read);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::write_zeroes), nvme_cmd_write_zeroes);
    EXPECT_EQ(static_cast<int>(w::IoOpcode::dataset_management), nvme_cmd_dsm);
    EXPECT_EQ(static_cast<int>(w::FabricsType::property_set), nvme_fabrics_type_property_set);
    EXPECT_EQ(static_cast<int>(w::FabricsType::connect), nvme_fabrics_type_connect);
    EXPECT_EQ(static_cast<int>(w::FabricsType::property_get), nvme_fabrics_type_property_get);
    EXPECT_EQ(static_cast<int>(w::FabricsType::disconnect), nvme_fabrics_type_disconnect);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::namespace_data), NVME_IDENTIFY_CNS_NS);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::controller), NVME_IDENTIFY_CNS_CTRL);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::active_namespace_list),
              NVME_IDENTIFY_CNS_NS_ACTIVE_LIST);
    EXPECT_EQ(static_cast<int>(w::IdentifyCns::namespace_descriptors),
              NVME_IDENTIFY_CNS_NS_DESC_LIST);
    EXPECT_EQ(static_cast<int>(w::FeatureId::number_of_queues), NVME_FEAT_FID_NUM_QUEUES);
    EXPECT_EQ(static_cast<int>(w::FeatureId::keep_alive_timer), NVME_FEAT_FID_KATO);
    EXPECT_EQ(static_cast<int>(w::LogPageId::discovery), NVME_LOG_LID_DISCOVER);
}

TEST(LibnvmeCrossCheck, Registers) {
    EXPECT_EQ(static_cast<int>(w::Property::cap), NVME_REG_CAP);
    EXPECT_EQ(static_cast<int>(w::Property::vs), NVME_REG_VS);
    EXPECT_EQ(static_cast<int>(w::Property::cc), NVME_REG_CC);
    EXPECT_EQ(static_cast<int>(w::Property::csts), NVME_REG_CSTS);
    EXPECT_EQ(static_cast<int>(w::Property::crto), NVME_REG_CRTO);
    EXPECT_EQ(w::Capabilities::kMqesShift, unsigned{NVME_CAP_MQES_SHIFT});
    EXPECT_EQ(w::Capabilities::kTimeoutShift, unsigned{NVME_CAP_TO_SHIFT});
    EXPECT_EQ(w::Capabilities::kCssShift, unsigned{NVME_CAP_CSS_SHIFT});
    EXPECT_EQ(w::Capabilities::kMpsminShift, unsigned{NVME_CAP_MPSMIN_SHIFT});
    EXPECT_EQ(w::Capabilities::kMpsmaxShift, unsigned{NVME_CAP_MPSMAX_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kEnableShift, unsigned{NVME_CC_EN_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kCssShift, unsigned{NVME_CC_CSS_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kMpsShift, unsigned{NVME_CC_MPS_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kAmsShift, unsigned{NVME_CC_AMS_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kShnShift, unsigned{NVME_CC_SHN_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kIosqesShift, unsigned{NVME_CC_IOSQES_SHIFT});
    EXPECT_EQ(w::ControllerConfig::kIocqesShift, unsigned{NVME_CC_IOCQES_SHIFT});
    EXPECT_EQ(w::ControllerStatus::kReadyShift, unsigned{NVME_CSTS_RDY_SHIFT});
    EXPECT_EQ(w::ControllerStatus::kFatalShift, unsigned{NVME_CSTS_CFS_SHIFT});
    EXPECT_EQ(w::ControllerStatus::kShstShift, unsigned{NVME_CSTS_SHST_SHIFT});
}

TEST(LibnvmeCrossCheck, StatusCodes) {
    EXPECT_EQ(static_cast<int>(w::StatusCodeType::generic), NVME_SCT_GENERIC);
    EXPECT_EQ(static_cast<int>(w::StatusCodeType::command_specific), NVME_SCT_CMD_SPECIFIC);
    EXPECT_EQ(static_cast<int>(w::StatusCodeType::media), NVME_SCT_MEDIA);
    EXPECT_EQ(static_cast<int>(w::StatusCodeType::path), NVME_SCT_PATH);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::invalid_opcode), NVME_SC_INVALID_OPCODE);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::invalid_field), NVME_SC_INVALID_FIELD);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::internal_error), NVME_SC_INTERNAL);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::invalid_namespace_or_format), NVME_SC_INVALID_NS);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::command_sequence_error), NVME_SC_CMD_SEQ_ERROR);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::invalid_number_of_sgl_descriptors),
              NVME_SC_SGL_INVALID_COUNT);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::data_sgl_length_invalid),
              NVME_SC_SGL_INVALID_DATA);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::sgl_descriptor_type_invalid),
              NVME_SC_SGL_INVALID_TYPE);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::sgl_offset_invalid), NVME_SC_SGL_INVALID_OFFSET);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::keep_alive_timer_expired), NVME_SC_KAT_EXPIRED);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::keep_alive_timeout_invalid), NVME_SC_KAT_INVALID);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::transient_transport_error),
              NVME_SC_TRAN_TPORT_ERROR);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::lba_out_of_range), NVME_SC_LBA_RANGE);
    EXPECT_EQ(static_cast<int>(w::GenericStatus::capacity_exceeded), NVME_SC_CAP_EXCEEDED);
    EXPECT_EQ(static_cast<int>(w::FabricsStatus::connect_incompatible_format),
              NVME_SC_CONNECT_FORMAT);
    EXPECT_EQ(static_cast<int>(w::FabricsStatus::connect_controller_busy),
              NVME_SC_CONNECT_CTRL_BUSY);
    EXPECT_EQ(static_cast<int>(w::FabricsStatus::connect_invalid_parameters),
              NVME_SC_CONNECT_INVALID_PARAM);
    EXPECT_EQ(static_cast<int>(w::FabricsStatus::connect_invalid_host),
              NVME_SC_CONNECT_INVALID_HOST);
    EXPECT_EQ(static_cast<int>(w::FabricsStatus::authentication_required), NVME_SC_AUTH_REQUIRED);
    EXPECT_EQ(static_cast<int>(w::AdminCommandStatus::invalid_queue_identifier),
              NVME_SC_QID_INVALID);
    EXPECT_EQ(static_cast<int>(w::NvmCommandStatus::attempted_write_to_read_only_range),
              NVME_SC_READ_ONLY);
    EXPECT_EQ(static_cast<int>(w::MediaStatus::unrecovered_read_error), NVME_SC_READ_ERROR);
}

TEST(LibnvmeCrossCheck, AsymmetricNamespaceAccess) {
    EXPECT_SAME_FIELD(w::IdentifyController, nvme_id_ctrl, anatt, anatt);
    EXPECT_SAME_FIELD(w::IdentifyController, nvme_id_ctrl, anacap, anacap);
    EXPECT_SAME_FIELD(w::IdentifyController, nvme_id_ctrl, anagrpmax, anagrpmax);
    EXPECT_SAME_FIELD(w::IdentifyController, nvme_id_ctrl, nanagrpid, nanagrpid);
    EXPECT_SAME_FIELD(w::IdentifyNamespace, nvme_id_ns, anagrpid, anagrpid);

    EXPECT_EQ(sizeof(w::AnaLogHeader), sizeof(nvme_ana_log));
    EXPECT_SAME_FIELD(w::AnaLogHeader, nvme_ana_log, change_count, chgcnt);
    EXPECT_SAME_FIELD(w::AnaLogHeader, nvme_ana_log, groups, ngrps);
    EXPECT_EQ(sizeof(w::AnaGroupDescriptor), sizeof(nvme_ana_group_desc));
    EXPECT_SAME_FIELD(w::AnaGroupDescriptor, nvme_ana_group_desc, group_id, grpid);
    EXPECT_SAME_FIELD(w::AnaGroupDescriptor, nvme_ana_group_desc, nsid_count, nnsids);
    EXPECT_SAME_FIELD(w::AnaGroupDescriptor, nvme_ana_group_desc, change_count, chgcnt);
    EXPECT_SAME_FIELD(w::AnaGroupDescriptor, nvme_ana_group_desc, state, state);
    EXPECT_EQ(offsetof(nvme_ana_group_desc, nsids), sizeof(w::AnaGroupDescriptor));

    EXPECT_EQ(static_cast<int>(w::AnaState::optimized), NVME_ANA_STATE_OPTIMIZED);
    EXPECT_EQ(static_cast<int>(w::AnaState::non_optimized), NVME_ANA_STATE_NONOPTIMIZED);
    EXPECT_EQ(static_cast<int>(w::AnaState::inaccessible), NVME_ANA_STATE_INACCESSIBLE);
    EXPECT_EQ(static_cast<int>(w::AnaState::persistent_loss), NVME_ANA_STATE_PERSISTENT_LOSS);
    EXPECT_EQ(static_cast<int>(w::AnaState::change), NVME_ANA_STATE_CHANGE);
    EXPECT_EQ(w::kCmicAnaReporting, NVME_CTRL_CMIC_MULTI_ANA_REPORTING);
    EXPECT_EQ(w::kOaesAnaChangeNotice, static_cast<std::uint32_t>(NVME_CTRL_OAES_ANA));
    EXPECT_EQ(w::kAnacapOptimized, NVME_CTRL_ANACAP_OPT);
    EXPECT_EQ(w::kAnacapNonOptimized, NVME_CTRL_ANACAP_NON_OPT);
    EXPECT_EQ(w::kAnacapInaccessible, NVME_CTRL_ANACAP_INACCESSIBLE);
    EXPECT_EQ(w::kAnacapPersistentLoss, NVME_CTRL_ANACAP_PERSISTENT_LOSS);
    EXPECT_EQ(w::kAnacapChange, NVME_CTRL_ANACAP_CHANGE);
    EXPECT_EQ(w::kAnacapGroupIdNoChange, NVME_CTRL_ANACAP_GRPID_NO_CHG);
    EXPECT_EQ(static_cast<int>(w::LogPageId::ana), NVME_LOG_LID_ANA);
    EXPECT_EQ(static_cast<int>(w::AsyncEventType::notice), NVME_AER_NOTICE);
    EXPECT_EQ(w::kAsyncNoticeAnaChange, NVME_AER_NOTICE_ANA);
    EXPECT_EQ(static_cast<int>(w::StatusCodeType::path), NVME_SCT_PATH);
    EXPECT_EQ(static_cast<int>(w::PathStatus::asymmetric_access_persistent_loss),
              NVME_SC_ANA_PERSISTENT_LOSS);
    EXPECT_EQ(static_cast<int>(w::PathStatus::asymmetric_access_inaccessible),
              NVME_SC_ANA_INACCESSIBLE);
    EXPECT_EQ(static_cast<int>(w::PathStatus::asymmetric_access_transition),
              NVME_SC_ANA_TRANSITION);
}
