#!/usr/bin/env python3
"""Prints the carry-less multiply folding constants of core/wire/crc_clmul.cpp.

    tools/crc-fold-constants.py

Polynomials over GF(2) as Python integers (bit k: the coefficient of x^k).
CRC-16/T10-DIF is MSB-first: its constants are x^k mod P as they are.
CRC-64/NVME is reflected: a constant is the 64-bit bit-reversal of its
polynomial, and a reflected carry-less product comes out multiplied by x, so
the exponents are one less (x^(D+63), x^(D-1) for a fold over D bits).
"""

P16 = (1 << 16) | 0x8BB7
P64 = (1 << 64) | 0xAD93D23594C93659


def mod(a, p):
    while a.bit_length() >= p.bit_length():
        a ^= p << (a.bit_length() - p.bit_length())
    return a


def div(a, p):
    q = 0
    while a.bit_length() >= p.bit_length():
        shift = a.bit_length() - p.bit_length()
        q |= 1 << shift
        a ^= p << shift
    return q


def reflect64(v):
    return int(f"{v:064b}"[::-1], 2)


def main():
    distances = [128 * i for i in range(1, 9)]
    print("// CRC-16/T10-DIF, {high, low}: {x^(D+64) mod P, x^D mod P}")
    for bits in distances:
        print(f"    {{0x{mod(1 << (bits + 64), P16):04X}, 0x{mod(1 << bits, P16):04X}}},  // D = {bits}")
    print(f"// x^80 mod P: 0x{mod(1 << 80, P16):04X}")
    print(f"// floor(x^80 / P) - x^64: 0x{div(1 << 80, P16) ^ (1 << 64):016X}")
    print("// CRC-64/NVME, {high, low}: {reflect64(x^(D-1) mod P), reflect64(x^(D+63) mod P)}")
    for bits in distances:
        print(f"    {{0x{reflect64(mod(1 << (bits - 1), P64)):016X}ull, "
              f"0x{reflect64(mod(1 << (bits + 63), P64)):016X}ull}},  // D = {bits}")
    print(f"// reflect64(x^127 mod P): 0x{reflect64(mod(1 << 127, P64)):016X}")
    print(f"// reflect64(floor(x^128 / P) - x^64): 0x{reflect64(div(1 << 128, P64) ^ (1 << 64)):016X}")
    print(f"// reflect64(P - x^64): 0x{reflect64(P64 ^ (1 << 64)):016X}")


if __name__ == "__main__":
    main()
