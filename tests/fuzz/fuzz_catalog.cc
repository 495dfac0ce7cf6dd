// SPDX-License-Identifier: MIT
// libFuzzer target: the object store's catalog decoder and journal (store_catalog.hpp).
// Arbitrary bytes must decode to a clear false or to contents that encode and decode
// back to themselves; any crash, sanitizer report or disagreement is a finding.
#include <cstdlib>
#include <cstring>

#include "store_catalog.hpp"

namespace cat = csd::catalog;

static void check_round_trip(const cat::Contents &c)
{
    const std::vector<uint8_t> again = cat::encode(c);
    cat::Contents back;
    if (!cat::decode(again.data(), again.size(), cat::kFormat2, &back) || cat::encode(back) != again ||
        back.objects.size() != c.objects.size() || back.reservations.size() != c.reservations.size()) {
        std::abort();  // decoded contents that do not encode back
    }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t mode = data[0] % 3;
    data++;
    size--;
    cat::Contents c;
    if (mode < 2) {  // a full catalog of format 1 or 2
        if (cat::decode(data, size, mode == 0 ? cat::kFormat1 : cat::kFormat2, &c)) check_round_trip(c);
        return 0;
    }
    // a journal applied to a small catalog
    csd::ObjectInfo o;
    o.name = "base";
    c.objects[o.name] = o;
    csd::Reservation r;
    r.id = 1;
    c.reservations[1] = r;
    if (cat::apply(data, size, &c)) check_round_trip(c);
    return 0;
}
