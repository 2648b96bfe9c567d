// Where the engine's own words go. fio's stdout belongs to fio's report: in
// the json, json+ and terse output formats it must hold nothing else, or every
// parser of it breaks. Built-in engines print nothing there; this engine says
// its start-up facts and notes through these two functions instead of
// log_info/log_err directly.
#pragma once

namespace nvmeof::engine {

// True when fio writes a machine-readable report (json, json+ or terse) in
// this process. fio's backend (--server) parses the client's --output-format
// when it is given after --client=HOST, so there it is the client's mode.
bool machine_readable_output();

// Start-up facts and other information: fio's normal text output in normal
// mode (forwarded to the client under --server); stderr in machine-readable
// modes, so the report on stdout stays parseable.
void say_info(const char* format, ...) __attribute__((format(printf, 1, 2)));

// Notes and warnings that are not errors: fio's error stream in normal mode
// (stderr, forwarded to the client under --server); this process's stderr in
// machine-readable modes (fio's client prints forwarded text on its stdout).
void say_note(const char* format, ...) __attribute__((format(printf, 1, 2)));

}  // namespace nvmeof::engine
