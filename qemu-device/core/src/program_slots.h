// program_slots.h - the downloadable program slots 0100h..01FFh (spec §8): chunked
// upload, verification when the last byte arrives, Execute reference counts, unload.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bpf_program.h"
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
    // Program Unload (8Ch).
    uint16_t unload(uint16_t id);
    // The runnable program in a slot, counted as in use until release(id); nullptr if none.
    std::shared_ptr<const BpfProgram> acquire(uint16_t id);
    void release(uint16_t id);
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
    };
    std::mutex mu_;
    Slot slots_[CSD_NR_SLOTS];
};

}  // namespace csd::core
