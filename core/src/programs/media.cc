// SPDX-License-Identifier: MIT
// media.cc - the blocks a media program (gather, embedding_bag) reads: merged into sorted
// distinct runs, staged one after another in the job's own device memory.
#include <algorithm>

#include "../program.h"

namespace csd::core {

uint16_t MediaPlan::runs()
{
    std::sort(wanted_.begin(), wanted_.end());
    extents.clear();
    stage_off.clear();
    const uint64_t max_blocks = CSD_MEDIA_MAX_STAGE / ns.lba_size;
    uint64_t blocks = 0;
    for (size_t i = 0; i < wanted_.size();) {
        uint64_t first = wanted_[i].first, last = wanted_[i].second;
        for (i++; i < wanted_.size() && wanted_[i].first <= last + 1; i++) last = std::max(last, wanted_[i].second);
        const uint64_t n = last - first + 1;
        if (n > max_blocks - blocks) return CSD_STATUS_INVALID_PARAMETERS | CSD_STATUS_DNR;
        stage_off.push_back(blocks * ns.lba_size);
        extents.push_back(csd_extent{first, static_cast<uint32_t>(n), nullptr});
        blocks += n;
    }
    wanted_.clear();
    wanted_.shrink_to_fit();
    staged_bytes_ = blocks * ns.lba_size;
    return CSD_STATUS_SUCCESS;
}

void MediaPlan::allocate()
{
    stage.resize(staged_bytes_);
    for (size_t i = 0; i < extents.size(); i++) extents[i].buf = stage.data() + stage_off[i];
}

const uint8_t *MediaPlan::at(uint64_t pos) const
{
    const uint64_t lba = pos / ns.lba_size;
    // the last run starting at or before lba holds it (the plan asked for it)
    auto it = std::upper_bound(extents.begin(), extents.end(), lba,
                               [](uint64_t l, const csd_extent &e) { return l < e.slba; });
    const size_t i = static_cast<size_t>(it - extents.begin()) - 1;
    return stage.data() + stage_off[i] + (pos - extents[i].slba * ns.lba_size);
}

}  // namespace csd::core
