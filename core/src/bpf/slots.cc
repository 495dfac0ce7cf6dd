// SPDX-License-Identifier: MIT
// bpf/slots.cc - Program Load and Unload on the downloadable slots (spec §8).
#include "slots.h"

#include "nvme_cs.h"

namespace csd::core {

namespace {

constexpr uint16_t kInvalidField = CSD_STATUS_INVALID_FIELD | CSD_STATUS_DNR;
constexpr uint16_t kSlotInUse = CSD_STATUS_PROGRAM_SLOT_IN_USE | CSD_STATUS_DNR;
constexpr uint16_t kLoadBytesExceeded = CSD_STATUS_PROGRAM_LOAD_BYTES_EXCEEDED | CSD_STATUS_DNR;

}  // namespace

uint64_t ProgramSlots::bytes_held() const
{
    uint64_t n = 0;
    for (const Slot &s : slots_) {
        if (s.state != State::empty) n += s.image_size;
    }
    return n;
}

uint64_t ProgramSlots::bytes_loading() const
{
    uint64_t n = 0;
    for (const Slot &s : slots_) {
        if (s.state == State::loading) n += s.image_size;
    }
    return n;
}

uint16_t ProgramSlots::load(const csd_cmd &c, const uint8_t *chunk, uint32_t *dw0, std::string *why,
                            uint64_t byte_budget)
{
    uint16_t id = c.cdw10 & 0xFFFF;
    const uint32_t size = c.cdw11, offset = c.cdw12, len = c.cdw13, record_size = c.cdw14 & 0xFFFF;
    std::unique_lock<std::mutex> g(mu_);
    if (offset == 0) {  // a new image: the slot named, or the first free one
        if (id == 0) {
            for (uint16_t i = 0; i < CSD_NR_SLOTS && id == 0; i++) {
                if (slots_[i].state == State::empty) id = static_cast<uint16_t>(CSD_SLOT_FIRST + i);
            }
            if (id == 0) return kSlotInUse;  // every slot holds or is loading a program
        }
        Slot &s = slots_[id - CSD_SLOT_FIRST];
        if (s.state != State::empty) return kSlotInUse;
        if (byte_budget && bytes_held() + size > byte_budget) return NVME_CS_MAX_PROGRAM_BYTES_EXCEEDED | CSD_STATUS_DNR;
        // Half-loaded images hold host memory (reserved here at their full size) until
        // their last chunk or an Unload: their total is capped, whoever sends them.
        if (bytes_loading() + size > CSD_MAX_LOADING_BYTES) return kLoadBytesExceeded;
        s.state = State::loading;
        s.active = false;  // a new program starts inactive
        s.image.clear();
        s.image.reserve(size);
        s.image_size = size;
        s.record_size = record_size;
    } else if (id == 0) {
        return kInvalidField;  // a later chunk names its slot
    }
    Slot &s = slots_[id - CSD_SLOT_FIRST];
    if (s.state != State::loading || s.verifying || offset != s.image.size() || size != s.image_size ||
        record_size != s.record_size) {
        return s.state == State::loading ? kInvalidField : (s.state == State::ready ? kSlotInUse : kInvalidField);
    }
    s.image.insert(s.image.end(), chunk, chunk + len);
    *dw0 = id;
    if (s.image.size() < s.image_size) return CSD_STATUS_SUCCESS;
    // The last byte arrived: verify and compile (the slot stays "loading" meanwhile).
    std::vector<uint8_t> image = std::move(s.image);
    s.verifying = true;
    g.unlock();
    std::unique_ptr<BpfProgram> prog;
    uint32_t fault = CSD_IMAGE_FAULT_NONE;
    const uint16_t st = BpfProgram::load(image.data(), image.size(), record_size, &prog, &fault, why);
    g.lock();
    s.image.clear();
    s.verifying = false;
    if (st != CSD_STATUS_SUCCESS) {
        s.state = State::empty;  // a rejected image leaves the slot empty
        *dw0 = st == (CSD_STATUS_INVALID_PROGRAM_IMAGE | CSD_STATUS_DNR) ? fault : 0;
        return st;
    }
    s.program = std::move(prog);
    s.state = State::ready;
    return CSD_STATUS_SUCCESS;
}

uint16_t ProgramSlots::unload(uint16_t id, bool refuse_active)
{
    if (!is_slot(id)) return CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR;
    std::lock_guard<std::mutex> g(mu_);
    Slot &s = slots_[id - CSD_SLOT_FIRST];
    if (s.state == State::empty) return CSD_STATUS_INVALID_PROGRAM | CSD_STATUS_DNR;
    if (s.users > 0 || s.verifying || (refuse_active && s.active)) return kSlotInUse;
    s = Slot{};  // also abandons an image still being loaded, and ends the activation
    return CSD_STATUS_SUCCESS;
}

std::shared_ptr<const BpfProgram> ProgramSlots::acquire(uint16_t id, bool need_active, bool *inactive)
{
    if (!is_slot(id)) return nullptr;
    std::lock_guard<std::mutex> g(mu_);
    Slot &s = slots_[id - CSD_SLOT_FIRST];
    if (s.state != State::ready) return nullptr;
    if (need_active && !s.active) {
        if (inactive) *inactive = true;
        return nullptr;
    }
    s.users++;
    return s.program;
}

uint16_t ProgramSlots::activate(uint16_t id, bool on, uint32_t max_active)
{
    if (!is_slot(id)) return NVME_CS_INVALID_PROGRAM_INDEX | CSD_STATUS_DNR;
    std::lock_guard<std::mutex> g(mu_);
    Slot &s = slots_[id - CSD_SLOT_FIRST];
    if (s.state != State::ready) return NVME_CS_NO_PROGRAM | CSD_STATUS_DNR;
    if (on && !s.active) {
        uint32_t n = 0;
        for (const Slot &o : slots_) n += o.active;
        if (n >= max_active) return NVME_CS_MAX_PROGRAMS_ACTIVATED | CSD_STATUS_DNR;
    }
    s.active = on;
    return CSD_STATUS_SUCCESS;
}

bool ProgramSlots::active(uint16_t id)
{
    if (!is_slot(id)) return false;
    std::lock_guard<std::mutex> g(mu_);
    const Slot &s = slots_[id - CSD_SLOT_FIRST];
    return s.state == State::ready && s.active;
}

void ProgramSlots::release(uint16_t id)
{
    std::lock_guard<std::mutex> g(mu_);
    Slot &s = slots_[id - CSD_SLOT_FIRST];
    if (s.users > 0) s.users--;
}

std::vector<std::pair<uint16_t, std::string>> ProgramSlots::list()
{
    std::vector<std::pair<uint16_t, std::string>> v;
    std::lock_guard<std::mutex> g(mu_);
    for (uint16_t i = 0; i < CSD_NR_SLOTS; i++) {
        if (slots_[i].state == State::ready) v.emplace_back(CSD_SLOT_FIRST + i, slots_[i].program->name());
    }
    return v;
}

}  // namespace csd::core
