// NVMEOF_INVARIANT(condition, "what must hold"): the transport's own
// bookkeeping (counters, command ID ownership, command states) checked where it
// can go wrong. A broken invariant is a bug here, not the peer's doing, and
// the queue cannot be trusted after it, so the check prints where and what
// and aborts. Compiled in only with `-Dinvariants=true` (sanitizer builds);
// otherwise the condition is not evaluated, so release and benchmark builds
// pay nothing, yet it is still compiled, so it cannot go stale unnoticed.
// Input from the wire (an unknown command ID, a short capsule) is never an
// invariant: the queue refuses it and fails, in every build.
#pragma once

#ifndef NVMEOF_INVARIANTS
#define NVMEOF_INVARIANTS 0
#endif

#if NVMEOF_INVARIANTS
#include <cstdio>
#include <cstdlib>

namespace nvmeof::detail {

[[noreturn, gnu::cold, gnu::noinline]] inline void invariant_broken(const char* file, int line,
                                                                    const char* condition,
                                                                    const char* what) noexcept {
    std::fprintf(stderr, "%s:%d: transport invariant broken: %s (%s)\n", file, line, what,
                 condition);
    std::fflush(stderr);
    std::abort();
}

}  // namespace nvmeof::detail

#define NVMEOF_INVARIANT(condition, what) \
    ((condition) ? static_cast<void>(0)   \
                 : ::nvmeof::detail::invariant_broken(__FILE__, __LINE__, #condition, what))
#else
#define NVMEOF_INVARIANT(condition, what) static_cast<void>(sizeof(!(condition)))
#endif
