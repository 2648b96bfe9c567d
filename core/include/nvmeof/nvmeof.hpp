// The public initiator API (no verbs types anywhere in it).
//
// Blocking, as in the Python package:
//   auto ctrl = nvmeof::Controller::connect({.target = "10.0.0.2", .subsystem_nqn = nqn});
//   auto ns = ctrl.namespace_at(1);           // lba_size(), size_lbas()
//   auto buf = ctrl.allocate(1 << 20);        // or ctrl.register_memory(ptr, len)
//   ns.write(buf, slba); ns.read(buf, slba, blocks, offset); ns.flush();
//
// Non-blocking (an event loop such as a fio engine), never throws or allocates:
//   auto io = ctrl.io();                      // I/O queue 0; valid while ctrl lives
//   switch (io.submit(ns, {nvmeof::Op::read, slba, blocks, &arena, offset, cookie})) {
//     case SubmitResult::queued: ...; case SubmitResult::busy: retry later;
//     case SubmitResult::invalid / failed: io.last_error() says why; }
//   nvmeof::Completion done[32];
//   for (auto& c : std::span(done, io.poll(done))) { c.user_data; c.status.ok(); }
//
// A transfer is split into io.pieces(ns, t) commands (MDTS / 65,536-block splits);
// pieces beyond the free slots wait in the queue and go out as poll() frees slots.
#pragma once

#include "nvmeof/controller.hpp"
#include "nvmeof/discovery.hpp"
#include "nvmeof/errors.hpp"
#include "nvmeof/memory.hpp"
#include "nvmeof/namespace.hpp"
#include "nvmeof/option_rules.hpp"
#include "nvmeof/options.hpp"
#include "nvmeof/queue.hpp"
#include "nvmeof/wire.hpp"
