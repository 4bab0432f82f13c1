// SystemC/TLM-2.0 structure of the ideal platform. Private to platform/.
#pragma once

#include <systemc>
#include <tlm>
#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace weft
{

// Addresses at or above this go to the OS emulator instead of memory: a
// syscall is a transaction to the OS emulator's register window.
constexpr uint64_t kOsWindow = 0xffff000000000000ull;

// A zero-latency shared memory. Guest data lives in qemu; the model sees the
// transactions so that their virtual times are the platform's, and counts them.
struct Memory : sc_core::sc_module {
    tlm_utils::simple_target_socket<Memory> socket;
    uint64_t accesses = 0;
    explicit Memory(sc_core::sc_module_name name);
    void b_transport(tlm::tlm_generic_payload &trans, sc_core::sc_time &delay);
};

// Traps OS calls: they cost zero time (the annotated delay passes through).
struct OsEmulator : sc_core::sc_module {
    tlm_utils::simple_target_socket<OsEmulator> socket;
    uint64_t calls = 0;
    explicit OsEmulator(sc_core::sc_module_name name);
    void b_transport(tlm::tlm_generic_payload &trans, sc_core::sc_time &delay);
};

// Zero-latency crossbar: every PE to memory and to the OS emulator.
struct Crossbar : sc_core::sc_module {
    tlm_utils::multi_passthrough_target_socket<Crossbar> targets;
    tlm_utils::simple_initiator_socket<Crossbar> to_memory;
    tlm_utils::simple_initiator_socket<Crossbar> to_os;
    uint64_t routed = 0;
    explicit Crossbar(sc_core::sc_module_name name);
    void b_transport(int id, tlm::tlm_generic_payload &trans, sc_core::sc_time &delay);
};

// A processing element: one guest thread. Its local time offset is the
// temporal-decoupling annotation of each transaction it issues.
struct Pe : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<Pe> socket;
    explicit Pe(sc_core::sc_module_name name);
    // Issue one transaction at absolute virtual time `at` (>= kernel time).
    void access(uint64_t addr, bool write, const sc_core::sc_time &at);
};

struct Top : sc_core::sc_module {
    std::vector<std::unique_ptr<Pe>> pes;
    Crossbar xbar;
    Memory memory;
    OsEmulator os;
    Top(sc_core::sc_module_name name, unsigned npes);
};

} // namespace weft
