// Prints what libnvmeof's DH-HMAC-CHAP code computes for given inputs, so
// dhchap_kat.py can check it against values Python derives on its own.
//   dhchap_kat_tool secret TEXT                      -> "<hh> <key hex>" or "error: ..."
//   dhchap_kat_tool transform TEXT NQN               -> transformed key hex
//   dhchap_kat_tool augment HASH CHALLENGE SECRET    -> augmented challenge hex
//   dhchap_kat_tool response host|controller HASH KEY CHALLENGE SEQ TID HOSTNQN SUBNQN
//   dhchap_kat_tool dh GROUP PRIVATE PEER            -> "<public hex> <shared hex>"
// HASH is 1..3, GROUP 1..5, byte strings are hex.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "auth/dhchap_crypto.hpp"

namespace {

using namespace nvmeof::auth;

Bytes from_hex(const std::string& text) {
    Bytes out;
    for (std::size_t i = 0; i + 1 < text.size(); i += 2) {
        out.push_back(static_cast<std::uint8_t>(std::stoul(text.substr(i, 2), nullptr, 16)));
    }
    return out;
}

std::string to_hex(const Bytes& bytes) {
    std::string out;
    char buf[3];
    for (const auto b : bytes) {
        std::snprintf(buf, sizeof buf, "%02x", unsigned{b});
        out += buf;
    }
    return out;
}

DhchapHash hash_arg(const char* text) {
    return static_cast<DhchapHash>(std::atoi(text));
}

int usage() {
    std::fprintf(stderr, "usage: see the comment at the top of dhchap_kat_tool.cpp\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 3) {
        return usage();
    }
    const std::string what = argv[1];
    try {
        if (what == "secret") {
            const Secret s = parse_secret(argv[2]);
            std::printf("%02u %s\n", unsigned{s.transform}, to_hex(s.key).c_str());
        } else if (what == "transform" && argc == 4) {
            std::printf("%s\n", to_hex(transform_key(parse_secret(argv[2]), argv[3])).c_str());
        } else if (what == "augment" && argc == 5) {
            std::printf("%s\n", to_hex(augmented_challenge(hash_arg(argv[2]), from_hex(argv[3]),
                                                           from_hex(argv[4])))
                                    .c_str());
        } else if (what == "response" && argc == 10) {
            const Bytes key = from_hex(argv[4]);
            const Bytes challenge = from_hex(argv[5]);
            const ResponseInput in{hash_arg(argv[3]),
                                   key,
                                   challenge,
                                   static_cast<std::uint32_t>(std::stoul(argv[6])),
                                   static_cast<std::uint16_t>(std::stoul(argv[7])),
                                   0,
                                   argv[8],
                                   argv[9]};
            const bool host = std::string(argv[2]) == "host";
            std::printf("%s\n", to_hex(host ? host_response(in) : controller_response(in)).c_str());
        } else if (what == "dh" && argc == 5) {
            const DhKey key =
                DhKey::from_private(static_cast<DhGroup>(std::atoi(argv[2])), from_hex(argv[3]));
            std::printf("%s %s\n", to_hex(key.public_value()).c_str(),
                        to_hex(key.shared_secret(from_hex(argv[4]))).c_str());
        } else {
            return usage();
        }
    } catch (const SecretError& e) {
        std::printf("error: %s\n", e.what());
    }
    return 0;
}
