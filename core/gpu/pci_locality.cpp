// RDMA device choice by PCIe locality, from sysfs (no CUDA needed).
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>

#include "nvmeof/base/errors.hpp"
#include "nvmeof/base/gpu.hpp"

namespace nvmeof {
namespace fs = std::filesystem;

std::string_view registration_path_name(RegistrationPath path) noexcept {
    switch (path) {
        case RegistrationPath::host:
            return "host";
        case RegistrationPath::dma_buf:
            return "dma-buf";
        case RegistrationPath::peermem:
            return "peermem";
        case RegistrationPath::staging:
            return "staging";
    }
    return "unknown";
}

std::string_view pcie_distance_name(PcieDistance distance) noexcept {
    switch (distance) {
        case PcieDistance::same_switch:
            return "same PCIe switch";
        case PcieDistance::same_root_complex:
            return "same PCIe root complex";
        case PcieDistance::same_node:
            return "same NUMA node";
        case PcieDistance::other_node:
            return "other NUMA node";
        case PcieDistance::unknown:
            return "unknown distance";
    }
    return "unknown distance";
}

namespace {

bool all_hex(std::string_view s) {
    return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
        return std::isxdigit(static_cast<unsigned char>(c)) != 0;
    });
}

// The PCI chain of a resolved sysfs device path: the host bridge component
// ("pci0000:00") and the PCI functions below it, the device itself last.
struct PciChain {
    std::string root;                // everything up to and including "pciDDDD:BB"
    std::vector<std::string> chain;  // normalised addresses
};

bool parse_chain(const fs::path& path, PciChain& out) {
    std::string prefix;
    bool in_pci = false;
    for (const fs::path& part : path) {
        const std::string name = part.string();
        if (!in_pci) {
            prefix += name + "/";
            if (name.size() > 3 && name.compare(0, 3, "pci") == 0 &&
                name.find(':') != std::string::npos) {
                in_pci = true;
                out.root = prefix;
            }
            continue;
        }
        const std::string address = normalize_pci_address(name);
        if (address.empty()) {
            return false;  // a non-PCI component below the host bridge
        }
        out.chain.push_back(address);
    }
    return in_pci && !out.chain.empty();
}

int read_numa_node(const fs::path& device) {
    std::ifstream in(device / "numa_node");
    int node = -1;
    if (!(in >> node)) {
        return -1;
    }
    return node;
}

PcieDistance distance_between(const PciChain& gpu, int gpu_node, const PciChain& nic,
                              int nic_node) {
    if (gpu.root == nic.root) {
        // Common bridges above both devices (the devices themselves excluded).
        const std::size_t gpu_parents = gpu.chain.size() - 1;
        const std::size_t nic_parents = nic.chain.size() - 1;
        std::size_t common = 0;
        while (common < gpu_parents && common < nic_parents &&
               gpu.chain[common] == nic.chain[common]) {
            ++common;
        }
        return common > 0 ? PcieDistance::same_switch : PcieDistance::same_root_complex;
    }
    return gpu_node == nic_node ? PcieDistance::same_node : PcieDistance::other_node;
}

}  // namespace

std::string normalize_pci_address(std::string_view address) {
    // [domain:]bus:device.function
    std::string text(address);
    std::transform(text.begin(), text.end(), text.begin(), [](char c) {
        return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    });
    const auto dot = text.rfind('.');
    if (dot == std::string::npos || dot + 2 != text.size() || !all_hex(text.substr(dot + 1))) {
        return "";
    }
    const std::string head = text.substr(0, dot);
    const auto last_colon = head.rfind(':');
    if (last_colon == std::string::npos) {
        return "";
    }
    const std::string device = head.substr(last_colon + 1);
    std::string rest = head.substr(0, last_colon);
    std::string domain = "0000";
    std::string bus = rest;
    if (const auto colon = rest.rfind(':'); colon != std::string::npos) {
        domain = rest.substr(0, colon);
        bus = rest.substr(colon + 1);
    }
    if (!all_hex(domain) || !all_hex(bus) || !all_hex(device) || bus.size() != 2 ||
        device.size() != 2 || domain.size() > 8) {
        return "";
    }
    // cuDeviceGetPCIBusId and nvidia-smi may print an 8-digit domain.
    while (domain.size() > 4 && domain.front() == '0') {
        domain.erase(0, 1);
    }
    domain.insert(0, 4 - std::min<std::size_t>(4, domain.size()), '0');
    return domain + ":" + bus + ":" + device + "." + text.substr(dot + 1);
}

std::vector<RdmaDeviceRank> rank_rdma_devices(std::string_view pci_address,
                                              const std::string& sysfs_root) {
    const std::string address = normalize_pci_address(pci_address);
    if (address.empty()) {
        throw InvalidArgument("'" + std::string(pci_address) +
                              "' is not a PCI address (DDDD:BB:DD.F)");
    }
    const fs::path root(sysfs_root);
    std::error_code ec;
    const fs::path gpu_path = fs::canonical(root / "bus" / "pci" / "devices" / address, ec);
    PciChain gpu_chain;
    if (ec || !parse_chain(gpu_path, gpu_chain)) {
        throw InvalidArgument("PCI device " + address + " is not under " +
                              (root / "bus" / "pci" / "devices").string() +
                              (ec ? ": " + ec.message() : ": not a PCI device path"));
    }
    const int gpu_node = read_numa_node(gpu_path);

    std::vector<RdmaDeviceRank> ranked;
    const fs::path class_dir = root / "class" / "infiniband";
    if (!fs::is_directory(class_dir, ec)) {
        return ranked;
    }
    for (const fs::directory_entry& entry : fs::directory_iterator(class_dir, ec)) {
        RdmaDeviceRank rank;
        rank.device = entry.path().filename().string();
        std::error_code link_ec;
        const fs::path device_path = fs::canonical(entry.path() / "device", link_ec);
        if (link_ec) {
            rank.note = "no PCI device link (" + link_ec.message() + ")";
            ranked.push_back(std::move(rank));
            continue;
        }
        std::error_code net_ec;
        for (const fs::directory_entry& net : fs::directory_iterator(device_path / "net", net_ec)) {
            rank.netdevs.push_back(net.path().filename().string());
        }
        std::sort(rank.netdevs.begin(), rank.netdevs.end());
        PciChain chain;
        if (!parse_chain(device_path, chain)) {
            rank.note = "not a PCI device (" + device_path.string() + ")";
            ranked.push_back(std::move(rank));
            continue;
        }
        rank.pci_address = chain.chain.back();
        rank.numa_node = read_numa_node(device_path);
        rank.distance = distance_between(gpu_chain, gpu_node, chain, rank.numa_node);
        ranked.push_back(std::move(rank));
    }
    std::sort(ranked.begin(), ranked.end(), [](const RdmaDeviceRank& a, const RdmaDeviceRank& b) {
        return a.distance != b.distance ? a.distance < b.distance : a.device < b.device;
    });
    return ranked;
}

std::string interface_ipv4(const std::string& interface) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) {
        return "";
    }
    std::unique_ptr<ifaddrs, decltype(&freeifaddrs)> guard(list, freeifaddrs);
    for (const ifaddrs* a = list; a != nullptr; a = a->ifa_next) {
        if (a->ifa_addr == nullptr || a->ifa_addr->sa_family != AF_INET ||
            interface != a->ifa_name) {
            continue;
        }
        sockaddr_in in{};
        std::memcpy(&in, a->ifa_addr, sizeof in);
        char text[INET_ADDRSTRLEN] = {};
        if (inet_ntop(AF_INET, &in.sin_addr, text, sizeof text) != nullptr) {
            return text;
        }
    }
    return "";
}

std::string pick_source_address(const std::vector<RdmaDeviceRank>& ranked,
                                const std::function<std::string(const std::string&)>& ipv4_of,
                                std::string* chosen_device) {
    for (const RdmaDeviceRank& rank : ranked) {
        for (const std::string& netdev : rank.netdevs) {
            std::string address = ipv4_of(netdev);
            if (!address.empty()) {
                if (chosen_device != nullptr) {
                    *chosen_device = rank.device;
                }
                return address;
            }
        }
    }
    return "";
}

}  // namespace nvmeof
