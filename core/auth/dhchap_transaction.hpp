// One DH-HMAC-CHAP transaction (NVMe Base 2.0 §8.13.5) on either side, as a
// message-in/message-out state machine: the host and the target plug it into
// their transports; the unit tests run both ends against each other.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "auth/dhchap_crypto.hpp"

namespace nvmeof::auth {

// A transaction that cannot continue. `local` is true when this side found
// the problem (it should send a Failure message with `reason`), false when the
// peer sent one.
class AuthError : public std::runtime_error {
  public:
    AuthError(bool local, wire::AuthFailure reason, const std::string& what)
        : std::runtime_error(what), local_(local), reason_(reason) {}
    bool local() const { return local_; }
    wire::AuthFailure reason() const { return reason_; }

  private:
    bool local_;
    wire::AuthFailure reason_;
};

struct HostAuthConfig {
    Secret host_secret;
    std::optional<Secret> controller_secret;  // set: bidirectional
    std::string host_nqn;
    std::string subsystem_nqn;
    std::vector<DhchapHash> hashes{std::begin(wire::kAllDhchapHashes),
                                   std::end(wire::kAllDhchapHashes)};
    std::vector<DhGroup> dh_groups{std::begin(wire::kAllDhGroups), std::end(wire::kAllDhGroups)};
    std::uint16_t transaction_id = 0;
};

class HostTransaction {
  public:
    explicit HostTransaction(HostAuthConfig config);

    Bytes negotiate() const;
    // The DH-HMAC-CHAP_Reply to the controller's Challenge. Throws AuthError.
    Bytes reply_to(ByteView challenge_message);
    // Checks Success1 (and the controller's response when bidirectional);
    // returns the Success2 to send when bidirectional. Throws AuthError.
    std::optional<Bytes> finish(ByteView success1_message);
    Bytes failure2(wire::AuthFailure reason) const;

    // What was agreed, for messages ("sha256/ffdhe2048").
    std::string agreed() const;

  private:
    HostAuthConfig config_;
    DhchapHash hash_ = DhchapHash::sha256;
    DhGroup dh_group_ = DhGroup::null;
    Bytes session_secret_;        // g^xy mod p; empty with the null group
    Bytes controller_challenge_;  // C2
    std::uint32_t s2_ = 0;
};

struct ControllerAuthConfig {
    Secret host_secret;
    std::optional<Secret> controller_secret;
    std::string host_nqn;
    std::string subsystem_nqn;
    // In the controller's order of preference; the first the host offers wins.
    std::vector<DhchapHash> hashes{std::begin(wire::kAllDhchapHashes),
                                   std::end(wire::kAllDhchapHashes)};
    std::vector<DhGroup> dh_groups{std::begin(wire::kAllDhGroups), std::end(wire::kAllDhGroups)};
};

class ControllerTransaction {
  public:
    explicit ControllerTransaction(ControllerAuthConfig config);

    // An Authentication Send payload. Never throws for bad input: a failure
    // is kept and delivered by the next receive().
    void on_send(ByteView message);
    // The message an Authentication Receive gets.
    Bytes receive();

    bool authenticated() const { return state_ == State::done; }
    // Why the transaction failed; empty while it has not.
    const std::string& failure() const { return failure_; }

  private:
    enum class State { negotiate, challenge, reply, success1, success2, done, failed };
    void fail(wire::AuthFailure reason, const std::string& why);
    void on_negotiate(ByteView message);
    void on_reply(ByteView message);

    ControllerAuthConfig config_;
    State state_ = State::negotiate;
    std::uint16_t transaction_id_ = 0;
    DhchapHash hash_ = DhchapHash::sha256;
    DhGroup dh_group_ = DhGroup::null;
    std::optional<DhKey> dh_key_;
    Bytes challenge_;
    std::uint32_t seqnum_ = 0;
    Bytes controller_response_;  // R2, when the host asked for it
    wire::AuthFailure failure_reason_ = wire::AuthFailure::failed;
    bool failure_pending_ = false;
    std::string failure_;
};

}  // namespace nvmeof::auth
