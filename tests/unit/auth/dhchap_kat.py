#!/usr/bin/env python3
"""Known-answer tests for libnvmeof's DH-HMAC-CHAP computations.

Every expected value is derived here, independently of the C++ code: secrets
are built the way nvme-cli's gen-dhchap-key builds them (key || CRC-32 LE,
base64), the key transformation, the responses and the augmented challenge
with hashlib/hmac, and the FFDHE primes from RFC 7919's own definition
p = 2^b - 2^(b-64) + (floor(2^(b-130) e) + X) 2^64 - 1 with e summed as a
series, so a wrong prime in OpenSSL's tables or ours would show up too.
"""
import base64
import hashlib
import hmac
import os
import random
import struct
import subprocess
import sys
import zlib

TOOL = sys.argv[1]
HASHES = {1: hashlib.sha256, 2: hashlib.sha384, 3: hashlib.sha512}
FFDHE_X = {1: (2048, 560316), 2: (3072, 2625351), 3: (4096, 5736041),
           4: (6144, 15705020), 5: (8192, 10965728)}
failures = 0


def tool(*args):
    out = subprocess.run([TOOL, *map(str, args)], check=True, capture_output=True, text=True)
    return out.stdout.strip()


def check(name, got, want):
    global failures
    if got != want:
        failures += 1
        print(f"FAIL {name}:\n  got  {got}\n  want {want}")


def e_scaled(bits):
    """floor(e * 2^bits), from e = sum 1/k!, with 64 guard bits."""
    scale = 1 << (bits + 64)
    total, term, k = 0, scale, 0
    while term:
        total += term
        k += 1
        term //= k
    return total >> 64


def ffdhe_prime(group):
    b, x = FFDHE_X[group]
    return 2**b - 2**(b - 64) + (e_scaled(b - 130) + x) * 2**64 - 1


def make_secret(hh, key):
    data = key + struct.pack("<I", zlib.crc32(key))
    return f"DHHC-1:{hh:02d}:{base64.b64encode(data).decode()}:"


def transform(hh, key, nqn):
    if hh == 0:
        return key
    return hmac.new(key, nqn.encode() + b"NVMe-over-Fabrics", HASHES[hh]).digest()


def response(hash_id, key, challenge, seq, tid, first, second, label):
    msg = (challenge + struct.pack("<I", seq) + struct.pack("<H", tid) + b"\0" + label +
           first.encode() + b"\0" + second.encode())
    return hmac.new(key, msg, HASHES[hash_id]).digest()


rng = random.Random(17)
host_nqn = "nqn.2014-08.org.nvmexpress:uuid:0c0a6a1a-66a5-4a0e-9c43-5b5c4a3f6b11"
sub_nqn = "nqn.2026-12.io.nvmeof:auth-kat"

# Secrets and the key transformation, for every hash id and key length.
for hh in (0, 1, 2, 3):
    for length in (32, 48, 64):
        key = bytes(rng.getrandbits(8) for _ in range(length))
        text = make_secret(hh, key)
        check(f"secret {hh}/{length}", tool("secret", text), f"{hh:02d} {key.hex()}")
        check(f"transform {hh}/{length}", tool("transform", text, host_nqn),
              transform(hh, key, host_nqn).hex())

# Secrets that must be refused.
good = make_secret(1, bytes(range(32)))
bad = {
    "crc": good[:-6] + ("A" if good[-6] != "A" else "B") + good[-5:],
    "length": make_secret(1, bytes(31)),
    "hash id": good.replace("DHHC-1:01:", "DHHC-1:04:"),
    "prefix": good.replace("DHHC-1", "DHHC-2"),
    "base64": good[:12] + "*" + good[13:],
}
for what, text in bad.items():
    out = tool("secret", text)
    if not out.startswith("error: "):
        failures += 1
        print(f"FAIL secret with a bad {what} was accepted: {out}")

# Responses and the augmented challenge.
for hash_id, hash_fn in HASHES.items():
    hl = hash_fn().digest_size
    key = os.urandom(hl)
    challenge = os.urandom(hl)
    seq, tid = rng.getrandbits(32), rng.getrandbits(16)
    check(f"host response {hash_id}",
          tool("response", "host", hash_id, key.hex(), challenge.hex(), seq, tid, host_nqn,
               sub_nqn),
          response(hash_id, key, challenge, seq, tid, host_nqn, sub_nqn, b"HostHost").hex())
    check(f"controller response {hash_id}",
          tool("response", "controller", hash_id, key.hex(), challenge.hex(), seq, tid,
               host_nqn, sub_nqn),
          response(hash_id, key, challenge, seq, tid, sub_nqn, host_nqn, b"Controller").hex())
    shared = os.urandom(256)
    check(f"augmented challenge {hash_id}",
          tool("augment", hash_id, challenge.hex(), shared.hex()),
          hmac.new(hash_fn(shared).digest(), challenge, hash_fn).digest().hex())

# FFDHE: public value and shared secret for every group.
for group, (bits, _) in FFDHE_X.items():
    p = ffdhe_prime(group)
    size = bits // 8
    x = rng.getrandbits(512) | 1
    y = rng.getrandbits(512) | 1
    peer = pow(2, y, p)
    got = tool("dh", group, f"{x:0128x}", f"{peer:0{2 * size}x}").split()
    check(f"ffdhe{bits} public", got[0], f"{pow(2, x, p):0{2 * size}x}")
    check(f"ffdhe{bits} shared", got[1], f"{pow(peer, x, p):0{2 * size}x}")
    for name, value in (("1", 1), ("p-1", p - 1), ("p", p)):
        out = tool("dh", group, f"{x:0128x}", f"{value:0{2 * size}x}")
        if not out.startswith("error: "):
            failures += 1
            print(f"FAIL ffdhe{bits}: peer value {name} accepted")

print("known-answer tests:", "FAILED" if failures else "all passed")
sys.exit(1 if failures else 0)
