/* SPDX-License-Identifier: MIT */
// bpf/slots.h - the downloadable program slots 0100h..01FFh (spec §8): chunked
// upload, verification when the last byte arrives, Execute reference counts, unload, and
// the standard front end's activation of the program a slot holds (one state for both
// front ends: it begins and ends with the program).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bpf.h"
#include "csd_core.h"

namespace csd::core {

// Whether a program id names a download slot (0100h..01FFh).
inline bool is_slot(uint16_t id) { return id >= CSD_SLOT_FIRST && id < CSD_SLOT_FIRST + CSD_NR_SLOTS; }

class ProgramSlots {
public:
    // Program Load (89h) with one chunk of the image; fields already checked by decode.
    // DW0 = the slot id, or the offending instruction for Invalid Program Image. A new
    // image that would take the images held (loaded or loading) past byte_budget (0: no
    // budget) is refused with Maximum Program Bytes Exceeded; one that would take the
    // images still being uploaded past CSD_MAX_LOADING_BYTES, with Program Load Bytes
    // Exceeded.
    uint16_t load(const csd_cmd &cmd, const uint8_t *chunk, uint32_t *dw0, std::string *why,
                  uint64_t byte_budget = 0);
    // Program Unload (8Ch); with refuse_active (the standard front end's unload), an active
    // program is Program Slot In Use too. Ends the program's activation.
    uint16_t unload(uint16_t id, bool refuse_active = false);
    // The runnable program in a slot, counted as in use until release(id); nullptr if none,
    // or, with need_active, if it is not active (then *inactive is set).
    std::shared_ptr<const BpfProgram> acquire(uint16_t id, bool need_active = false, bool *inactive = nullptr);
    void release(uint16_t id);
    // Program Activation Management of a slot's program: No Program for a slot without a
    // runnable program; Maximum Programs Activated when max_active are active already.
    uint16_t activate(uint16_t id, bool on, uint32_t max_active);
    // Whether a slot holds a runnable, active program.
    bool active(uint16_t id);
    // (id, name) of every runnable program, in id order (for C0h).
    std::vector<std::pair<uint16_t, std::string>> list();

private:
    uint64_t bytes_held() const;     // image bytes of the slots loaded or loading; mu_ held
    uint64_t bytes_loading() const;  // image bytes of the slots still loading; mu_ held
    enum class State { empty, loading, ready };
    struct Slot {
        State state = State::empty;
        std::vector<uint8_t> image;  // what arrived so far (loading)
        uint32_t image_size = 0;
        uint32_t record_size = 0;
        std::shared_ptr<const BpfProgram> program;  // ready
        uint32_t users = 0;  // Executes queued or running
        bool verifying = false;  // the last chunk arrived; the verifier is running
        bool active = false;     // activated (standard front end); only while ready
    };
    std::mutex mu_;
    Slot slots_[CSD_NR_SLOTS];
};

}  // namespace csd::core
