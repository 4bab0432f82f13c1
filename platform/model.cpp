#include "model.h"

namespace weft
{

using sc_core::sc_time;
using tlm::tlm_generic_payload;

Memory::Memory(sc_core::sc_module_name name) : sc_module(name), socket("socket")
{
    socket.register_b_transport(this, &Memory::b_transport);
}

void Memory::b_transport(tlm_generic_payload &trans, sc_time &)
{
    accesses++;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

OsEmulator::OsEmulator(sc_core::sc_module_name name) : sc_module(name), socket("socket")
{
    socket.register_b_transport(this, &OsEmulator::b_transport);
}

void OsEmulator::b_transport(tlm_generic_payload &trans, sc_time &)
{
    calls++;
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

Crossbar::Crossbar(sc_core::sc_module_name name)
    : sc_module(name), targets("targets"), to_memory("to_memory"), to_os("to_os")
{
    targets.register_b_transport(this, &Crossbar::b_transport);
}

void Crossbar::b_transport(int, tlm_generic_payload &trans, sc_time &delay)
{
    routed++;
    if (trans.get_address() >= kOsWindow)
        to_os->b_transport(trans, delay);
    else
        to_memory->b_transport(trans, delay);
}

Pe::Pe(sc_core::sc_module_name name) : sc_module(name), socket("socket") {}

void Pe::access(uint64_t addr, bool write, const sc_time &at)
{
    tlm_generic_payload trans;
    uint64_t data = 0;
    trans.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    trans.set_address(addr);
    trans.set_data_ptr(reinterpret_cast<unsigned char *>(&data));
    trans.set_data_length(sizeof data);
    trans.set_streaming_width(sizeof data);
    trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_time delay = at - sc_core::sc_time_stamp(); // local offset (temporal decoupling)
    socket->b_transport(trans, delay);
}

Top::Top(sc_core::sc_module_name name, unsigned npes)
    : sc_module(name), xbar("xbar"), memory("memory"), os("os")
{
    for (unsigned i = 0; i < npes; i++) {
        pes.emplace_back(new Pe(sc_core::sc_gen_unique_name("pe")));
        pes.back()->socket.bind(xbar.targets);
    }
    xbar.to_memory.bind(memory.socket);
    xbar.to_os.bind(os.socket);
}

} // namespace weft
