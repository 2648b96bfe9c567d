#include "storage.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace nvmeof::target {
namespace {

// MADV_POPULATE_WRITE is Linux 5.14; older headers lack the name.
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// MemAvailable of /proc/meminfo in bytes; 0 when unknown.
std::uint64_t available_memory() {
    std::ifstream meminfo("/proc/meminfo");
    constexpr std::string_view kKey = "MemAvailable:";
    for (std::string line; std::getline(meminfo, line);) {
        if (line.starts_with(kKey)) {
            return std::strtoull(line.c_str() + kKey.size(), nullptr, 10) * 1024;  // "N kB"
        }
    }
    return 0;
}

// RAM: anonymous memory, allocated and touched when the target starts, as a
// RAM disk's memory is there before the first I/O. Left to fault in on first
// touch, every benchmark would measure page faults in the data path instead:
// on a paravirtualized VM about 9 µs per 4 KiB page, 2.5 s per GiB on the
// target's only thread (2026-12-04). Transparent huge pages where the kernel
// allows them: 512 times fewer faults and fewer TLB misses.
class RamStorage final : public Storage {
  public:
    explicit RamStorage(std::uint64_t size) : size_(size) {
        const std::uint64_t available = available_memory();
        if (available != 0 && size > available) {
            throw UsageError("--namespace ram: " + std::to_string(size) +
                             " bytes is more than the " + std::to_string(available) +
                             " bytes of memory available (a RAM namespace is allocated at start; "
                             "use a smaller size or a file: namespace)");
        }
        void* base = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (base == MAP_FAILED) {
            throw std::system_error(
                errno, std::generic_category(),
                "mapping a RAM namespace of " + std::to_string(size) + " bytes");
        }
        base_ = static_cast<std::uint8_t*>(base);
        (void)madvise(base_, size_, MADV_HUGEPAGE);  // best effort: THP may be off
        populate();
    }
    RamStorage(const RamStorage&) = delete;
    RamStorage& operator=(const RamStorage&) = delete;
    ~RamStorage() override { munmap(base_, size_); }

    std::uint64_t size_bytes() const override { return size_; }
    int read(std::uint64_t offset, std::span<std::uint8_t> out) override {
        std::memcpy(out.data(), base_ + offset, out.size());
        return 0;
    }
    int write(std::uint64_t offset, std::span<const std::uint8_t> in) override {
        std::memcpy(base_ + offset, in.data(), in.size());
        return 0;
    }
    int write_zeroes(std::uint64_t offset, std::uint64_t length) override {
        std::memset(base_ + offset, 0, length);
        return 0;
    }
    int flush() override { return 0; }

  private:
    void populate() {
        if (madvise(base_, size_, MADV_POPULATE_WRITE) == 0) {
            return;
        }
        if (errno != EINVAL) {  // EINVAL: a kernel before 5.14; ENOMEM, EFAULT: out of memory
            const int error = errno;
            munmap(base_, size_);
            throw std::system_error(
                error, std::generic_category(),
                "allocating a RAM namespace of " + std::to_string(size_) + " bytes");
        }
        const auto page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
        for (std::uint64_t offset = 0; offset < size_; offset += page) {
            base_[offset] = 0;
        }
    }

    std::uint8_t* base_ = nullptr;
    std::uint64_t size_ = 0;
};

class FileStorage final : public Storage {
  public:
    FileStorage(int fd, std::uint64_t size) : fd_(fd), size_(size) {}
    FileStorage(const FileStorage&) = delete;
    FileStorage& operator=(const FileStorage&) = delete;
    ~FileStorage() override {
        fsync(fd_);
        close(fd_);
    }

    std::uint64_t size_bytes() const override { return size_; }
    int read(std::uint64_t offset, std::span<std::uint8_t> out) override {
        std::size_t done = 0;
        while (done < out.size()) {
            const ssize_t n =
                pread(fd_, out.data() + done, out.size() - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n < 0) {
                return errno;
            }
            if (n == 0) {  // a file shorter than the namespace reads as zeroes
                std::memset(out.data() + done, 0, out.size() - done);
                break;
            }
            done += static_cast<std::size_t>(n);
        }
        return 0;
    }
    int write(std::uint64_t offset, std::span<const std::uint8_t> in) override {
        std::size_t done = 0;
        while (done < in.size()) {
            const ssize_t n =
                pwrite(fd_, in.data() + done, in.size() - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return n < 0 ? errno : EIO;
            }
            done += static_cast<std::size_t>(n);
        }
        return 0;
    }
    int write_zeroes(std::uint64_t offset, std::uint64_t length) override {
        static const std::vector<std::uint8_t> zeroes(1u << 16);
        while (length > 0) {
            const auto chunk =
                static_cast<std::size_t>(std::min<std::uint64_t>(length, zeroes.size()));
            if (const int error = write(offset, std::span(zeroes.data(), chunk))) {
                return error;
            }
            offset += chunk;
            length -= chunk;
        }
        return 0;
    }
    int flush() override { return fdatasync(fd_) == 0 ? 0 : errno; }

  private:
    int fd_ = -1;
    std::uint64_t size_ = 0;
};

[[noreturn]] void fail(const std::string& what) {
    throw std::system_error(errno, std::generic_category(), what);
}

std::unique_ptr<Storage> open_file(const NamespaceConfig& config) {
    const bool exists = access(config.path.c_str(), F_OK) == 0;
    if (!exists && config.size_bytes == 0) {
        throw UsageError("--namespace file:" + config.path +
                         ": the file does not exist and no --size was given to create it");
    }
    const int fd = open(config.path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fail("opening namespace file " + config.path);
    }
    struct stat st {};
    if (fstat(fd, &st) != 0) {
        const int error = errno;
        close(fd);
        errno = error;
        fail("fstat of " + config.path);
    }
    std::uint64_t size = 0;
    if (S_ISBLK(st.st_mode)) {
        const off_t end = lseek(fd, 0, SEEK_END);
        size = end > 0 ? static_cast<std::uint64_t>(end) : 0;
    } else if (!exists || static_cast<std::uint64_t>(st.st_size) == 0) {
        if (ftruncate(fd, static_cast<off_t>(config.store_bytes())) != 0) {
            const int error = errno;
            close(fd);
            errno = error;
            fail("sizing namespace file " + config.path);
        }
        size = config.store_bytes();
    } else {
        size = static_cast<std::uint64_t>(st.st_size);
    }
    size -= size % config.block_format().extended_bytes();
    if (size == 0) {
        close(fd);
        throw UsageError("--namespace file:" + config.path + ": smaller than one block");
    }
    return std::make_unique<FileStorage>(fd, size);
}

}  // namespace

std::unique_ptr<Storage> open_storage(const NamespaceConfig& config) {
    if (config.backing == NamespaceConfig::Backing::ram) {
        return std::make_unique<RamStorage>(config.store_bytes());
    }
    return open_file(config);
}

}  // namespace nvmeof::target
