// In-band authentication (NVMe Base 2.0 §8.13, NVMe-oF 1.1 §6.3): the
// Authentication Send/Receive commands and the DH-HMAC-CHAP messages they
// carry. Pure byte layout: every parser takes bytes a peer sent and returns a
// struct or throws AuthMessageError naming what is wrong; nothing here does
// cryptography or touches verbs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "nvmeof/wire/command.hpp"

namespace nvmeof::wire {

// SECP and SPSP of every Authentication Send/Receive for DH-HMAC-CHAP.
inline constexpr std::uint8_t kAuthSecurityProtocol = 0xE9;
inline constexpr std::uint8_t kAuthSpsp0 = 0x01;
inline constexpr std::uint8_t kAuthSpsp1 = 0x01;

struct AuthCommand {
    std::uint8_t opcode;  // 0x7F
    std::uint8_t flags;
    std::uint16_t command_id;
    std::uint8_t fctype;  // 0x05 Send, 0x06 Receive
    std::uint8_t reserved5[19];
    SglDescriptor sgl1;
    std::uint8_t reserved40;
    std::uint8_t spsp0;
    std::uint8_t spsp1;
    std::uint8_t secp;
    std::uint32_t length;  // TL (Send) or AL (Receive)
    std::uint8_t reserved48[16];
};
static_assert(sizeof(AuthCommand) == kSqeSize);
static_assert(offsetof(AuthCommand, sgl1) == 24);
static_assert(offsetof(AuthCommand, spsp0) == 41);
static_assert(offsetof(AuthCommand, spsp1) == 42);
static_assert(offsetof(AuthCommand, secp) == 43);
static_assert(offsetof(AuthCommand, length) == 44);

Sqe authentication_send_command(std::uint32_t transfer_length, const SglDescriptor& data);
Sqe authentication_receive_command(std::uint32_t allocation_length, const SglDescriptor& data);
AuthCommand as_auth(const Sqe& sqe);

// AUTH-Type (message byte 0) and AUTH-Id (byte 1).
enum class AuthType : std::uint8_t { common = 0x00, dhchap = 0x01 };
enum class AuthMessage : std::uint8_t {
    negotiate = 0x00,
    challenge = 0x01,
    reply = 0x02,
    success1 = 0x03,
    success2 = 0x04,
    failure2 = 0xF0,
    failure1 = 0xF1,
};
std::string_view auth_message_name(AuthMessage id);

enum class DhchapHash : std::uint8_t { sha256 = 0x01, sha384 = 0x02, sha512 = 0x03 };
enum class DhGroup : std::uint8_t {
    null = 0x00,
    ffdhe2048 = 0x01,
    ffdhe3072 = 0x02,
    ffdhe4096 = 0x03,
    ffdhe6144 = 0x04,
    ffdhe8192 = 0x05,
};
inline constexpr DhchapHash kAllDhchapHashes[] = {DhchapHash::sha256, DhchapHash::sha384,
                                                  DhchapHash::sha512};
inline constexpr DhGroup kAllDhGroups[] = {DhGroup::null,      DhGroup::ffdhe2048,
                                           DhGroup::ffdhe3072, DhGroup::ffdhe4096,
                                           DhGroup::ffdhe6144, DhGroup::ffdhe8192};
bool known_hash(std::uint8_t id);
bool known_dh_group(std::uint8_t id);
std::size_t hash_length(DhchapHash hash);       // 32, 48, 64
std::size_t dh_value_length(DhGroup group);     // 0 for null, else the modulus in bytes
std::string_view hash_name(DhchapHash hash);    // "sha256", ...
std::string_view dh_group_name(DhGroup group);  // "null", "ffdhe2048", ...

// Failure reason code explanations (AUTH_Failure1/2 byte 7); the reason code
// (byte 6) is always 0x01 "DH-HMAC-CHAP failure".
inline constexpr std::uint8_t kAuthFailureReason = 0x01;
enum class AuthFailure : std::uint8_t {
    failed = 0x01,
    not_usable = 0x02,
    concat_mismatch = 0x03,
    hash_unusable = 0x04,
    dhgroup_unusable = 0x05,
    incorrect_payload = 0x06,
    incorrect_protocol_message = 0x07,
};
std::string auth_failure_text(std::uint8_t explanation);

// Fixed heads of the messages; variable parts follow as the comments say.
struct AuthProtocolDescriptor {
    std::uint8_t auth_id;  // 0x01 DH-HMAC-CHAP
    std::uint8_t reserved1;
    std::uint8_t halen;
    std::uint8_t dhlen;
    std::uint8_t hash_ids[30];
    std::uint8_t dh_group_ids[30];
};
static_assert(sizeof(AuthProtocolDescriptor) == 64);
static_assert(offsetof(AuthProtocolDescriptor, hash_ids) == 4);
static_assert(offsetof(AuthProtocolDescriptor, dh_group_ids) == 34);
inline constexpr std::uint8_t kDhchapAuthId = 0x01;

struct AuthNegotiateHead {
    std::uint8_t auth_type;  // common
    std::uint8_t auth_id;    // negotiate
    std::uint8_t reserved2[2];
    std::uint16_t transaction_id;
    std::uint8_t sc_c;  // secure channel concatenation: this project offers none
    std::uint8_t napd;  // number of protocol descriptors that follow
};
static_assert(sizeof(AuthNegotiateHead) == 8);
static_assert(offsetof(AuthNegotiateHead, transaction_id) == 4);
static_assert(offsetof(AuthNegotiateHead, sc_c) == 6);

struct DhchapChallengeHead {
    std::uint8_t auth_type;  // dhchap
    std::uint8_t auth_id;    // challenge
    std::uint8_t reserved2[2];
    std::uint16_t transaction_id;
    std::uint8_t hl;  // hash length: the challenge's length
    std::uint8_t reserved7;
    std::uint8_t hash_id;
    std::uint8_t dh_group_id;
    std::uint16_t dhvlen;
    std::uint32_t seqnum;
    // hl bytes of challenge, then dhvlen bytes of the controller's DH value
};
static_assert(sizeof(DhchapChallengeHead) == 16);
static_assert(offsetof(DhchapChallengeHead, hl) == 6);
static_assert(offsetof(DhchapChallengeHead, hash_id) == 8);
static_assert(offsetof(DhchapChallengeHead, dhvlen) == 10);
static_assert(offsetof(DhchapChallengeHead, seqnum) == 12);

struct DhchapReplyHead {
    std::uint8_t auth_type;
    std::uint8_t auth_id;  // reply
    std::uint8_t reserved2[2];
    std::uint16_t transaction_id;
    std::uint8_t hl;
    std::uint8_t reserved7;
    std::uint8_t cvalid;  // bit 0: the controller challenge is valid (bidirectional)
    std::uint8_t reserved9;
    std::uint16_t dhvlen;
    std::uint32_t seqnum;  // S2, 0 when unidirectional
    // hl bytes of response, hl bytes of controller challenge, dhvlen bytes of
    // the host's DH value
};
static_assert(sizeof(DhchapReplyHead) == 16);
static_assert(offsetof(DhchapReplyHead, cvalid) == 8);
static_assert(offsetof(DhchapReplyHead, dhvlen) == 10);
static_assert(offsetof(DhchapReplyHead, seqnum) == 12);

struct DhchapSuccess1Head {
    std::uint8_t auth_type;
    std::uint8_t auth_id;  // success1
    std::uint8_t reserved2[2];
    std::uint16_t transaction_id;
    std::uint8_t hl;
    std::uint8_t reserved7;
    std::uint8_t rvalid;  // bit 0: the controller's response follows
    std::uint8_t reserved9[7];
    // hl bytes of the controller's response
};
static_assert(sizeof(DhchapSuccess1Head) == 16);
static_assert(offsetof(DhchapSuccess1Head, rvalid) == 8);

struct DhchapSuccess2 {
    std::uint8_t auth_type;
    std::uint8_t auth_id;  // success2
    std::uint8_t reserved2[2];
    std::uint16_t transaction_id;
    std::uint8_t reserved6[10];
};
static_assert(sizeof(DhchapSuccess2) == 16);

struct AuthFailureMessage {
    std::uint8_t auth_type;  // common
    std::uint8_t auth_id;    // failure1 or failure2
    std::uint8_t reserved2[2];
    std::uint16_t transaction_id;
    std::uint8_t reason;
    std::uint8_t explanation;
};
static_assert(sizeof(AuthFailureMessage) == 8);
static_assert(offsetof(AuthFailureMessage, reason) == 6);

// A malformed or unexpected message; what() says which field.
class AuthMessageError : public std::runtime_error {
  public:
    AuthMessageError(AuthFailure reason, const std::string& what)
        : std::runtime_error(what), reason_(reason) {}
    AuthFailure reason() const { return reason_; }

  private:
    AuthFailure reason_;
};

using Bytes = std::vector<std::uint8_t>;

// Decoded messages.
struct Negotiate {
    std::uint16_t transaction_id = 0;
    std::uint8_t sc_c = 0;
    std::vector<DhchapHash> hashes;  // known ids only, in the host's order
    std::vector<DhGroup> dh_groups;
};
struct Challenge {
    std::uint16_t transaction_id = 0;
    DhchapHash hash = DhchapHash::sha256;
    DhGroup dh_group = DhGroup::null;
    std::uint32_t seqnum = 0;
    Bytes challenge;  // hash_length(hash) bytes
    Bytes dh_value;   // dh_value_length(dh_group) bytes
};
struct Reply {
    std::uint16_t transaction_id = 0;
    Bytes response;
    bool bidirectional = false;
    std::uint32_t seqnum = 0;
    Bytes controller_challenge;  // empty when !bidirectional
    Bytes dh_value;
};
struct Success1 {
    std::uint16_t transaction_id = 0;
    Bytes controller_response;  // empty when the controller sent none
};
struct Failure {
    AuthMessage which = AuthMessage::failure1;
    std::uint16_t transaction_id = 0;
    std::uint8_t reason = 0;
    std::uint8_t explanation = 0;
};

// Builders: the exact bytes to send.
Bytes build_negotiate(const Negotiate& message);
Bytes build_challenge(const Challenge& message);
Bytes build_reply(const Reply& message);
Bytes build_success1(const Success1& message, std::uint8_t hash_len);
Bytes build_success2(std::uint16_t transaction_id);
Bytes build_failure(AuthMessage which, std::uint16_t transaction_id, AuthFailure explanation);

// Which message a buffer holds (AUTH-Id), checking AUTH-Type agrees; throws on
// a buffer too short to say.
AuthMessage peek_auth_message(std::span<const std::uint8_t> bytes);

// Parsers for untrusted bytes. Each checks AUTH-Type/AUTH-Id, every length
// against the buffer, the ids against the known lists, and the lengths
// against the hash and group; failure reasons are what the receiver should
// answer with.
Negotiate parse_negotiate(std::span<const std::uint8_t> bytes);
Challenge parse_challenge(std::span<const std::uint8_t> bytes);
// `hash` was agreed in the Challenge: it fixes HL.
Reply parse_reply(std::span<const std::uint8_t> bytes, DhchapHash hash, DhGroup dh_group);
Success1 parse_success1(std::uint8_t expected_hl, std::span<const std::uint8_t> bytes);
std::uint16_t parse_success2(std::span<const std::uint8_t> bytes);
Failure parse_failure(std::span<const std::uint8_t> bytes);

}  // namespace nvmeof::wire
