// DH-HMAC-CHAP cryptography (NVMe Base 2.0 §8.13.5): the DHHC-1 secret
// representation, the key transformation, HMAC/hash, the FFDHE groups of
// RFC 7919, and the response and augmented-challenge computations. OpenSSL
// supplies the primitives; nothing here knows about queues or verbs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "nvmeof/wire/auth.hpp"

namespace nvmeof::auth {

using wire::Bytes;
using wire::DhchapHash;
using wire::DhGroup;
using ByteView = std::span<const std::uint8_t>;

// A secret that cannot be used; what() names the reason.
class SecretError : public std::invalid_argument {
  public:
    using std::invalid_argument::invalid_argument;
};

// "DHHC-1:<hh>:<base64 of key || CRC-32 LE>:". hh is 00 (use the key as it
// is) or the hash (01 SHA-256, 02 SHA-384, 03 SHA-512) of the transformation;
// the key is 32, 48 or 64 bytes.
struct Secret {
    std::uint8_t transform = 0;  // 0 or a DhchapHash value
    Bytes key;
};
// Throws SecretError naming what is wrong (prefix, hash id, base64, length, CRC).
Secret parse_secret(std::string_view text);
std::string format_secret(const Secret& secret);

std::uint32_t crc32(ByteView data);          // IEEE 802.3, as zlib
Bytes base64_decode(std::string_view text);  // throws SecretError
std::string base64_encode(ByteView data);

Bytes digest(DhchapHash hash, ByteView data);
Bytes hmac(DhchapHash hash, ByteView key, ByteView data);
Bytes random_bytes(std::size_t count);
std::uint32_t random_seqnum();  // never 0

// The key the response HMAC uses: the secret's key when its hash id is 00,
// else HMAC_hash(key, nqn || "NVMe-over-Fabrics"). `nqn` is the host NQN for
// the host secret, the subsystem NQN for the controller secret.
Bytes transform_key(const Secret& secret, std::string_view nqn);

// Ca = HMAC_H(H(shared secret), C); the challenge itself without a DH group.
Bytes augmented_challenge(DhchapHash hash, ByteView challenge, ByteView shared_secret);

// The values each side's response covers (§8.13.5.4):
//   R1 = HMAC(Kh, C1 || S1 || TID || SC_C || "HostHost" || NQNh || 00h || NQNc)
//   R2 = HMAC(Kc, C2 || S2 || TID || SC_C || "Controller" || NQNc || 00h || NQNh)
// S and TID little-endian; C is the augmented challenge when a DH group is used.
struct ResponseInput {
    DhchapHash hash = DhchapHash::sha256;
    ByteView key;        // transformed
    ByteView challenge;  // augmented when a DH group is in use
    std::uint32_t seqnum = 0;
    std::uint16_t transaction_id = 0;
    std::uint8_t sc_c = 0;
    std::string_view host_nqn;
    std::string_view subsystem_nqn;
};
Bytes host_response(const ResponseInput& in);
Bytes controller_response(const ResponseInput& in);

// Compares without leaking where the first difference is.
bool equal_secret(ByteView a, ByteView b);

// One side's ephemeral FFDHE key (g = 2, RFC 7919 primes from OpenSSL).
class DhKey {
  public:
    // A fresh random private exponent.
    static DhKey generate(DhGroup group);
    // A given private exponent (big-endian), for the known-answer tests.
    static DhKey from_private(DhGroup group, ByteView private_exponent);
    ~DhKey();
    DhKey(DhKey&&) noexcept;
    DhKey& operator=(DhKey&&) noexcept;

    // g^x mod p, big-endian, padded to the modulus length.
    Bytes public_value() const;
    // peer^x mod p, padded the same way. Throws SecretError for a peer value
    // outside 2..p-2 (which would make the secret guessable).
    Bytes shared_secret(ByteView peer_public) const;

  private:
    struct State;
    explicit DhKey(std::unique_ptr<State> state);
    std::unique_ptr<State> state_;
};

}  // namespace nvmeof::auth
