#include "auth/dhchap_crypto.hpp"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/rand.h>

#include <algorithm>
#include <array>
#include <cstring>

namespace nvmeof::auth {
namespace {

constexpr std::string_view kSecretPrefix = "DHHC-1:";
constexpr std::string_view kTransformLabel = "NVMe-over-Fabrics";
constexpr std::string_view kHostLabel = "HostHost";
constexpr std::string_view kControllerLabel = "Controller";
constexpr std::size_t kCrcLength = 4;
constexpr std::size_t kKeyLengths[] = {32, 48, 64};
// 512-bit private exponents: above twice the strength of the largest group
// (RFC 7919 §5.2 asks for at least 2 × 200 bits for ffdhe8192).
constexpr std::size_t kPrivateExponentBytes = 64;
constexpr std::string_view kBase64Alphabet =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

const EVP_MD* evp_md(DhchapHash hash) {
    switch (hash) {
        case DhchapHash::sha256:
            return EVP_sha256();
        case DhchapHash::sha384:
            return EVP_sha384();
        case DhchapHash::sha512:
            return EVP_sha512();
    }
    throw SecretError("unknown hash");
}

void append(Bytes& out, ByteView data) {
    out.insert(out.end(), data.begin(), data.end());
}
void append(Bytes& out, std::string_view text) {
    out.insert(out.end(), text.begin(), text.end());
}
void append_le(Bytes& out, std::uint64_t value, unsigned bytes) {
    for (unsigned i = 0; i < bytes; ++i) {
        out.push_back(static_cast<std::uint8_t>(value >> (8 * i)));
    }
}

struct BnDeleter {
    void operator()(BIGNUM* bn) const { BN_clear_free(bn); }
};
using BigNum = std::unique_ptr<BIGNUM, BnDeleter>;
struct BnCtxDeleter {
    void operator()(BN_CTX* ctx) const { BN_CTX_free(ctx); }
};
struct PkeyDeleter {
    void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct PkeyCtxDeleter {
    void operator()(EVP_PKEY_CTX* ctx) const { EVP_PKEY_CTX_free(ctx); }
};

[[noreturn]] void openssl_failed(const char* what) {
    throw std::runtime_error(std::string("OpenSSL: ") + what + " failed");
}

BigNum to_bn(ByteView bytes) {
    BigNum bn(BN_bin2bn(bytes.data(), static_cast<int>(bytes.size()), nullptr));
    if (!bn) {
        openssl_failed("BN_bin2bn");
    }
    return bn;
}

Bytes to_padded(const BIGNUM* bn, std::size_t length) {
    Bytes out(length);
    if (BN_bn2binpad(bn, out.data(), static_cast<int>(length)) < 0) {
        openssl_failed("BN_bn2binpad");
    }
    return out;
}

// The group's prime, taken from OpenSSL's named RFC 7919 groups.
BigNum group_prime(DhGroup group) {
    if (group == DhGroup::null) {
        throw SecretError("the null DH group has no prime");
    }
    std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter> ctx(
        EVP_PKEY_CTX_new_from_name(nullptr, "DH", nullptr));
    if (!ctx || EVP_PKEY_fromdata_init(ctx.get()) <= 0) {
        openssl_failed("EVP_PKEY_fromdata_init(DH)");
    }
    std::string name(wire::dh_group_name(group));
    const OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, name.data(), 0),
        OSSL_PARAM_construct_end()};
    EVP_PKEY* raw = nullptr;
    if (EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_KEY_PARAMETERS,
                          const_cast<OSSL_PARAM*>(params)) <= 0) {
        openssl_failed("EVP_PKEY_fromdata(ffdhe group)");
    }
    std::unique_ptr<EVP_PKEY, PkeyDeleter> params_key(raw);
    BIGNUM* p = nullptr;
    if (EVP_PKEY_get_bn_param(params_key.get(), OSSL_PKEY_PARAM_FFC_P, &p) <= 0) {
        openssl_failed("EVP_PKEY_get_bn_param(p)");
    }
    return BigNum(p);
}

}  // namespace

std::uint32_t crc32(ByteView data) {
    std::uint32_t crc = 0xFFFFFFFFu;
    for (const std::uint8_t byte : data) {
        crc ^= byte;
        for (int bit = 0; bit < 8; ++bit) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}

Bytes base64_decode(std::string_view text) {
    if (text.size() % 4 != 0) {
        throw SecretError("base64 text length " + std::to_string(text.size()) +
                          " is not a multiple of 4");
    }
    Bytes out;
    std::uint32_t accumulator = 0;
    int bits = 0;
    std::size_t padding = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '=') {
            if (i + 2 < text.size()) {
                throw SecretError("base64 padding '=' before the end");
            }
            ++padding;
            continue;
        }
        const auto value = kBase64Alphabet.find(c);
        if (value == std::string_view::npos || padding != 0) {
            throw SecretError(std::string("invalid base64 character '") + c + "'");
        }
        accumulator = (accumulator << 6) | static_cast<std::uint32_t>(value);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<std::uint8_t>(accumulator >> bits));
        }
    }
    return out;
}

std::string base64_encode(ByteView data) {
    std::string out;
    for (std::size_t i = 0; i < data.size(); i += 3) {
        const std::size_t n = std::min<std::size_t>(3, data.size() - i);
        std::uint32_t group = 0;
        for (std::size_t j = 0; j < 3; ++j) {
            group = (group << 8) | (j < n ? data[i + j] : 0u);
        }
        for (std::size_t j = 0; j < 4; ++j) {
            out.push_back(j <= n ? kBase64Alphabet[(group >> (18 - 6 * j)) & 0x3F] : '=');
        }
    }
    return out;
}

Secret parse_secret(std::string_view text) {
    if (!text.starts_with(kSecretPrefix)) {
        throw SecretError("a DH-HMAC-CHAP secret starts with \"DHHC-1:\"");
    }
    text.remove_prefix(kSecretPrefix.size());
    if (text.size() < 4 || text[2] != ':' || text.back() != ':') {
        throw SecretError("a DH-HMAC-CHAP secret has the form DHHC-1:<hh>:<base64>:");
    }
    const std::string_view hash_text = text.substr(0, 2);
    Secret secret;
    if (hash_text == "00") {
        secret.transform = 0;
    } else if (hash_text == "01" || hash_text == "02" || hash_text == "03") {
        secret.transform = static_cast<std::uint8_t>(hash_text[1] - '0');
    } else {
        throw SecretError("secret hash id \"" + std::string(hash_text) +
                          "\" is not 00, 01, 02 or 03");
    }
    Bytes decoded = base64_decode(text.substr(3, text.size() - 4));
    const std::size_t key_length = decoded.size() < kCrcLength ? 0 : decoded.size() - kCrcLength;
    if (std::find(std::begin(kKeyLengths), std::end(kKeyLengths), key_length) ==
        std::end(kKeyLengths)) {
        throw SecretError("secret key is " + std::to_string(key_length) +
                          " bytes; it must be 32, 48 or 64 (plus a 4-byte CRC)");
    }
    std::uint32_t stored = 0;
    for (std::size_t i = 0; i < kCrcLength; ++i) {
        stored |= std::uint32_t{decoded[key_length + i]} << (8 * i);
    }
    decoded.resize(key_length);
    if (crc32(decoded) != stored) {
        throw SecretError("secret CRC-32 does not match its key (mistyped or truncated secret?)");
    }
    secret.key = std::move(decoded);
    return secret;
}

std::string format_secret(const Secret& secret) {
    Bytes data = secret.key;
    append_le(data, crc32(secret.key), kCrcLength);
    std::string out(kSecretPrefix);
    out += '0';
    out += static_cast<char>('0' + secret.transform);
    out += ':';
    out += base64_encode(data);
    out += ':';
    return out;
}

Bytes digest(DhchapHash hash, ByteView data) {
    Bytes out(EVP_MAX_MD_SIZE);
    unsigned length = 0;
    if (EVP_Digest(data.data(), data.size(), out.data(), &length, evp_md(hash), nullptr) != 1) {
        openssl_failed("EVP_Digest");
    }
    out.resize(length);
    return out;
}

Bytes hmac(DhchapHash hash, ByteView key, ByteView data) {
    Bytes out(EVP_MAX_MD_SIZE);
    unsigned length = 0;
    if (HMAC(evp_md(hash), key.data(), static_cast<int>(key.size()), data.data(), data.size(),
             out.data(), &length) == nullptr) {
        openssl_failed("HMAC");
    }
    out.resize(length);
    return out;
}

Bytes random_bytes(std::size_t count) {
    Bytes out(count);
    if (count != 0 && RAND_bytes(out.data(), static_cast<int>(count)) != 1) {
        openssl_failed("RAND_bytes");
    }
    return out;
}

std::uint32_t random_seqnum() {
    for (;;) {
        const Bytes b = random_bytes(4);
        const std::uint32_t value = b[0] | (b[1] << 8) | (b[2] << 16) | (std::uint32_t{b[3]} << 24);
        if (value != 0) {
            return value;
        }
    }
}

Bytes transform_key(const Secret& secret, std::string_view nqn) {
    if (secret.transform == 0) {
        return secret.key;
    }
    Bytes message;
    append(message, nqn);
    append(message, kTransformLabel);
    return hmac(static_cast<DhchapHash>(secret.transform), secret.key, message);
}

Bytes augmented_challenge(DhchapHash hash, ByteView challenge, ByteView shared_secret) {
    if (shared_secret.empty()) {
        return Bytes(challenge.begin(), challenge.end());
    }
    return hmac(hash, digest(hash, shared_secret), challenge);
}

namespace {

Bytes response(const ResponseInput& in, std::string_view label, std::string_view first_nqn,
               std::string_view second_nqn) {
    Bytes message;
    append(message, in.challenge);
    append_le(message, in.seqnum, 4);
    append_le(message, in.transaction_id, 2);
    message.push_back(in.sc_c);
    append(message, label);
    append(message, first_nqn);
    message.push_back(0);
    append(message, second_nqn);
    return hmac(in.hash, in.key, message);
}

}  // namespace

Bytes host_response(const ResponseInput& in) {
    return response(in, kHostLabel, in.host_nqn, in.subsystem_nqn);
}

Bytes controller_response(const ResponseInput& in) {
    return response(in, kControllerLabel, in.subsystem_nqn, in.host_nqn);
}

bool equal_secret(ByteView a, ByteView b) {
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

struct DhKey::State {
    DhGroup group;
    BigNum prime;
    BigNum exponent;
};

DhKey::DhKey(std::unique_ptr<State> state) : state_(std::move(state)) {}
DhKey::~DhKey() = default;
DhKey::DhKey(DhKey&&) noexcept = default;
DhKey& DhKey::operator=(DhKey&&) noexcept = default;

DhKey DhKey::generate(DhGroup group) {
    const Bytes exponent = random_bytes(kPrivateExponentBytes);
    return from_private(group, exponent);
}

DhKey DhKey::from_private(DhGroup group, ByteView private_exponent) {
    auto state = std::make_unique<State>();
    state->group = group;
    state->prime = group_prime(group);
    state->exponent = to_bn(private_exponent);
    if (BN_is_zero(state->exponent.get()) || BN_is_one(state->exponent.get())) {
        throw SecretError("DH private exponent must be above 1");
    }
    BN_set_flags(state->exponent.get(), BN_FLG_CONSTTIME);
    return DhKey(std::move(state));
}

namespace {

BigNum mod_exp(const BIGNUM* base, const BIGNUM* exponent, const BIGNUM* prime) {
    std::unique_ptr<BN_CTX, BnCtxDeleter> ctx(BN_CTX_new());
    BigNum result(BN_new());
    if (!ctx || !result ||
        BN_mod_exp_mont_consttime(result.get(), base, exponent, prime, ctx.get(), nullptr) != 1) {
        openssl_failed("BN_mod_exp_mont_consttime");
    }
    return result;
}

}  // namespace

Bytes DhKey::public_value() const {
    BigNum generator(BN_new());
    if (!generator || BN_set_word(generator.get(), 2) != 1) {
        openssl_failed("BN_set_word");
    }
    return to_padded(mod_exp(generator.get(), state_->exponent.get(), state_->prime.get()).get(),
                     wire::dh_value_length(state_->group));
}

Bytes DhKey::shared_secret(ByteView peer_public) const {
    const std::size_t length = wire::dh_value_length(state_->group);
    if (peer_public.size() != length) {
        throw SecretError("peer DH value is " + std::to_string(peer_public.size()) +
                          " bytes, expected " + std::to_string(length));
    }
    const BigNum peer = to_bn(peer_public);
    BigNum limit(BN_dup(state_->prime.get()));
    if (!limit || BN_sub_word(limit.get(), 1) != 1) {
        openssl_failed("BN_sub_word");
    }
    // 0, 1 and p-1 (and anything not below p) give a secret an attacker knows.
    if (BN_cmp(peer.get(), BN_value_one()) <= 0 || BN_cmp(peer.get(), limit.get()) >= 0) {
        throw SecretError("peer DH value is outside 2..p-2");
    }
    return to_padded(mod_exp(peer.get(), state_->exponent.get(), state_->prime.get()).get(),
                     length);
}

}  // namespace nvmeof::auth
