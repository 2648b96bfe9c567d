// CRC-16/T10-DIF and CRC-64/NVME by carry-less multiplication (x86-64
// PCLMULQDQ), the folding method of Intel's white paper "Fast CRC Computation
// for Generic Polynomials Using PCLMULQDQ Instruction".
//
// Over GF(2), a message's CRC is M(x)·x^n mod P (n = 16 or 64), the initial
// value having been xored into its first n bits. Take the message 128 bits at a
// time: a chunk A with D more bits after it contributes A·x^D, and with
// A = A_hi·x^64 + A_lo
//
//     A·x^D ≡ A_hi·(x^(D+64) mod P) + A_lo·(x^D mod P)   (mod P),
//
// two 64×64-bit carry-less products, each under 128 bits, which stand where the
// chunk D bits further on stands: xoring them into that chunk ("folding")
// leaves the CRC unchanged. Eight accumulators, a chunk apart, fold 128 bytes
// per step (D = 1024), so that eight products are in flight at once; at the end
// they fold into the last one (D = 896, 768, ..., 128), the chunks left fold in
// one at a time (D = 128), and the last 128 bits R give R·x^n mod P through one
// more fold and a Barrett reduction. Bytes after the last whole chunk (under
// 16) go through the tables.
//
// CRC-16/T10-DIF is MSB-first: each chunk is byte-reversed on loading, so that
// bit k of the register is the coefficient of x^k, and products come out as
// they are. CRC-64/NVME is reflected: chunks are loaded as they are, bit k of
// the register being the coefficient of x^(127-k) (the first byte's lowest bit
// the highest power); the carry-less product of two bit-reversed 64-bit values
// is the bit-reversed 127-bit product, which in a 128-bit register is the
// product times x. Its constants absorb that x (x^(D+63) and x^(D-1)).
//
// The constants are printed by tools/crc-fold-constants.py, which computes
// x^k mod P and the Barrett quotient floor(x^m / P) by polynomial division.
#include "crc.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace nvmeof::wire::crc {

#if defined(__x86_64__)

// Compiled for PCLMULQDQ and SSE4.1 (PSHUFB, PEXTRQ) whatever the build's
// -march; only called where clmul_supported() said so.
#define NVMEOF_CLMUL [[gnu::target("pclmul,sse4.1")]]
#define NVMEOF_CLMUL_INLINE [[gnu::target("pclmul,sse4.1"), gnu::always_inline]] inline

namespace {

constexpr std::size_t kChunk = 16;               // bytes in one register
constexpr std::size_t kLanes = 8;                // accumulators
constexpr std::size_t kBlock = kChunk * kLanes;  // bytes folded per step

// A fold's constant: the two 64-bit halves of a register, each the multiplier
// of the same half of the register it folds.
struct FoldConstant {
    std::uint64_t high;
    std::uint64_t low;
};
// Indexed by the fold's distance in chunks (D = 128·i bits), 1 to 8.
using FoldConstants = FoldConstant[kLanes + 1];

// CRC-16/T10-DIF (P = x^16 + 0x8BB7): high half x^(D+64) mod P, low half x^D mod P.
constexpr FoldConstants kCrc16Fold = {
    {0, 0},           {0x1FAA, 0xA010},  // D = 128
    {0x7ACC, 0x857D},                    // D = 256
    {0x4A84, 0x84DA},                    // D = 384
    {0xDD31, 0x1069},                    // D = 512
    {0xF65C, 0xE2C0},                    // D = 640
    {0x4132, 0xDFCB},                    // D = 768
    {0xBD4A, 0xD9DD},                    // D = 896
    {0x2295, 0x6123},                    // D = 1024: one step of the eight accumulators
};
constexpr std::uint64_t kCrc16X80 = 0x2D56;                // x^80 mod P
constexpr std::uint64_t kCrc16Mu = 0xF65A57F81D33A48Aull;  // floor(x^80 / P) - x^64
constexpr std::uint64_t kCrc16Poly = 0x18BB7;              // P

// CRC-64/NVME (P = x^64 + 0xAD93D23594C93659), bit-reversed: high half
// reflect64(x^(D-1) mod P), low half reflect64(x^(D+63) mod P).
constexpr FoldConstants kCrc64Fold = {
    {0, 0},
    {0x21E9761E252621ACull, 0xEADC41FD2BA3D420ull},  // D = 128
    {0xE1E0BB9D45D7A44Cull, 0xB0BC2E589204F500ull},  // D = 256
    {0xA3FFDC1FE8E82A8Bull, 0xBDD7AC0EE1A4A0F0ull},  // D = 384
    {0x62242240ACE5045Aull, 0x0C32CDB31E18A84Aull},  // D = 512
    {0x03363823E6E791E5ull, 0x7B0AB10DD0F809FEull},  // D = 640
    {0x34F5A24E22D66E90ull, 0x3C255F5EBC414423ull},  // D = 768
    {0x946588403D4ADCBCull, 0xD083DD594D96319Dull},  // D = 896
    {0x5F852FB61E8D92DCull, 0xA1CA681E733F9C40ull},  // D = 1024
};
constexpr std::uint64_t kCrc64X127 = 0x21E9761E252621ACull;  // reflect64(x^127 mod P)
constexpr std::uint64_t kCrc64Mu = 0x13F67D194D77CFBBull;    // reflect64(floor(x^128 / P) - x^64)
constexpr std::uint64_t kCrc64Poly = 0x9A6C9329AC4BC9B5ull;  // reflect64(P - x^64)

NVMEOF_CLMUL_INLINE __m128i constant(const FoldConstant& k) {
    return _mm_set_epi64x(static_cast<long long>(k.high), static_cast<long long>(k.low));
}

NVMEOF_CLMUL_INLINE __m128i low_only(std::uint64_t v) {
    return _mm_cvtsi64_si128(static_cast<long long>(v));
}

NVMEOF_CLMUL_INLINE std::uint64_t low_half(__m128i x) {
    return static_cast<std::uint64_t>(_mm_cvtsi128_si64(x));
}

NVMEOF_CLMUL_INLINE std::uint64_t high_half(__m128i x) {
    return static_cast<std::uint64_t>(_mm_extract_epi64(x, 1));
}

// 16 bytes at any alignment; byte-reversed for an MSB-first CRC.
template <bool kReverse>
NVMEOF_CLMUL_INLINE __m128i load(const std::uint8_t* p) {
    const __m128i x = _mm_loadu_si128(static_cast<const __m128i*>(static_cast<const void*>(p)));
    if constexpr (kReverse) {
        return _mm_shuffle_epi8(x,
                                _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
    } else {
        return x;
    }
}

// x moved forward over the distance k was made for.
NVMEOF_CLMUL_INLINE __m128i fold(__m128i x, __m128i k) {
    return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11));
}

// Folds `chunks` (at least 1) chunks from p into one, `first` xored into the
// first: a 128-bit value whose CRC, as if it were the whole message, is the
// message's.
template <bool kReverse>
NVMEOF_CLMUL_INLINE __m128i fold_chunks(const std::uint8_t* p, std::size_t chunks, __m128i first,
                                        const FoldConstants& k) {
    __m128i v;
    if (chunks >= kLanes) {
        __m128i x[kLanes];
#pragma GCC unroll 8
        for (std::size_t i = 0; i < kLanes; ++i) {
            x[i] = load<kReverse>(p + i * kChunk);
        }
        x[0] = _mm_xor_si128(x[0], first);
        p += kBlock;
        chunks -= kLanes;
        const __m128i step = constant(k[kLanes]);
        for (; chunks >= kLanes; chunks -= kLanes, p += kBlock) {
#pragma GCC unroll 8
            for (std::size_t i = 0; i < kLanes; ++i) {
                x[i] = _mm_xor_si128(fold(x[i], step), load<kReverse>(p + i * kChunk));
            }
        }
        v = x[kLanes - 1];
#pragma GCC unroll 8
        for (std::size_t i = 0; i + 1 < kLanes; ++i) {
            v = _mm_xor_si128(v, fold(x[i], constant(k[kLanes - 1 - i])));
        }
    } else {
        v = _mm_xor_si128(load<kReverse>(p), first);
        p += kChunk;
        --chunks;
    }
    const __m128i one = constant(k[1]);
    for (; chunks > 0; --chunks, p += kChunk) {
        v = _mm_xor_si128(fold(v, one), load<kReverse>(p));
    }
    return v;
}

}  // namespace

bool clmul_supported() noexcept {
    __builtin_cpu_init();  // may run before the constructors (a static initializer's call)
    return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
}

NVMEOF_CLMUL std::uint16_t crc16_t10dif_clmul(std::uint16_t crc, const void* data,
                                              std::size_t length) noexcept {
    if (length < kChunk) {
        return crc16_t10dif_table(crc, data, length);
    }
    const auto* p = static_cast<const std::uint8_t*>(data);
    const std::size_t chunks = length / kChunk;
    // The CRC so far goes into the first 16 bits, the highest powers.
    const __m128i r = fold_chunks<true>(
        p, chunks, _mm_set_epi64x(static_cast<long long>(std::uint64_t{crc} << 48), 0), kCrc16Fold);
    // S = R_hi·(x^80 mod P) + R_lo·x^16 ≡ R·x^16, under 80 bits.
    const __m128i s = _mm_xor_si128(_mm_clmulepi64_si128(r, low_only(kCrc16X80), 0x01),
                                    _mm_slli_si128(_mm_move_epi64(r), 2));
    // Barrett: the quotient q = floor(S / P) is floor(floor(S / x^16)·floor(x^80 / P) / x^64),
    // floor(x^80 / P)'s x^64 term added as a plain xor; the remainder is S - q·P.
    const __m128i a = _mm_srli_si128(s, 2);
    const std::uint64_t q =
        high_half(_mm_clmulepi64_si128(a, low_only(kCrc16Mu), 0x00)) ^ low_half(a);
    const std::uint64_t qp =
        low_half(_mm_clmulepi64_si128(low_only(q), low_only(kCrc16Poly), 0x00));
    const auto folded = static_cast<std::uint16_t>(low_half(s) ^ qp);
    const std::size_t tail = length % kChunk;
    return tail == 0 ? folded : crc16_t10dif_table(folded, p + (length - tail), tail);
}

NVMEOF_CLMUL std::uint64_t crc64_nvme_clmul(std::uint64_t crc, const void* data,
                                            std::size_t length) noexcept {
    if (length < kChunk) {
        return crc64_nvme_table(crc, data, length);
    }
    const auto* p = static_cast<const std::uint8_t*>(data);
    const std::size_t chunks = length / kChunk;
    // The register (the CRC so far, inverted) goes into the first 8 bytes.
    const __m128i r = fold_chunks<false>(p, chunks, low_only(~crc), kCrc64Fold);
    // S = R_hi·(x^128 mod P) + R_lo·x^64 ≡ R·x^64, 128 bits (R_lo·x^64, reflected,
    // is R's high half moved to the low one).
    const __m128i s =
        _mm_xor_si128(_mm_clmulepi64_si128(r, low_only(kCrc64X127), 0x00), _mm_srli_si128(r, 8));
    // Barrett: q = floor(S_hi·floor(x^128 / P) / x^64), the quotient's x^64 term
    // added as S_hi, the product's extra x taken out by a shift; the remainder
    // is S_lo - (q·P mod x^64), with P's x^64 term contributing nothing to it.
    const std::uint64_t s_hi = low_half(s);
    const std::uint64_t q =
        (low_half(_mm_clmulepi64_si128(s, low_only(kCrc64Mu), 0x00)) << 1) ^ s_hi;
    const __m128i qp = _mm_clmulepi64_si128(low_only(q), low_only(kCrc64Poly), 0x00);
    const std::uint64_t qp_low = (high_half(qp) << 1) | (low_half(qp) >> 63);
    const std::uint64_t folded = ~(high_half(s) ^ qp_low);
    const std::size_t tail = length % kChunk;
    return tail == 0 ? folded : crc64_nvme_table(folded, p + (length - tail), tail);
}

#undef NVMEOF_CLMUL_INLINE
#undef NVMEOF_CLMUL

#else  // not x86-64: the tables

bool clmul_supported() noexcept {
    return false;
}

std::uint16_t crc16_t10dif_clmul(std::uint16_t crc, const void* data, std::size_t length) noexcept {
    return crc16_t10dif_table(crc, data, length);
}

std::uint64_t crc64_nvme_clmul(std::uint64_t crc, const void* data, std::size_t length) noexcept {
    return crc64_nvme_table(crc, data, length);
}

#endif

}  // namespace nvmeof::wire::crc
