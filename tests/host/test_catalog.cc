// SPDX-License-Identifier: MIT
// The object store's catalog and journal codec (host/store/store_catalog.hpp), checked as
// properties over random contents against a plain std::map model: what is encoded decodes
// to the same; a journal applies like the model's operations; no truncation or damaged
// byte is ever read as a catalog it is not (a clear false, never a crash: the fuzzer
// fuzz_catalog does the same with arbitrary bytes); entries the decoder would refuse are
// refused at put.
#include <gtest/gtest.h>

#include <random>

#include "csd/error.hpp"
#include "store_catalog.hpp"

using namespace csd;
namespace cat = csd::catalog;

namespace {

std::string random_string(std::mt19937_64 &g, size_t max, bool nonempty)
{
    const size_t n = (nonempty ? 1 : 0) + g() % (max + (nonempty ? 0 : 1));
    std::string s(n, ' ');
    for (auto &c : s) c = static_cast<char>(1 + g() % 255);  // any byte but NUL
    return s;
}

ObjectInfo random_object(std::mt19937_64 &g)
{
    ObjectInfo o;
    o.name = random_string(g, g() % 4 ? 20 : cat::kMaxName, true);
    o.dtype = g() % 3 ? std::string("<f4") : random_string(g, cat::kMaxDtype, false);
    o.shape.resize(g() % (cat::kMaxDims + 1));
    for (auto &d : o.shape) d = g();
    o.bytes = g();
    o.block = g();
    o.crc32c = static_cast<uint32_t>(g());
    o.generation = g();
    return o;
}

Reservation random_reservation(std::mt19937_64 &g)
{
    Reservation r;
    r.id = g() | 1;
    r.block = g();
    r.blocks = g();
    r.time = g();
    r.owner = random_string(g, cat::kMaxOwner, false);
    return r;
}

cat::Contents random_contents(std::mt19937_64 &g)
{
    cat::Contents c;
    const int objects = static_cast<int>(g() % 40), reservations = static_cast<int>(g() % 6);
    for (int i = 0; i < objects; i++) {
        ObjectInfo o = random_object(g);
        c.objects[o.name] = o;
    }
    for (int i = 0; i < reservations; i++) {
        Reservation r = random_reservation(g);
        c.reservations[r.id] = r;
    }
    return c;
}

void expect_same(const cat::Contents &a, const cat::Contents &b)
{
    ASSERT_EQ(a.objects.size(), b.objects.size());
    for (const auto &[name, o] : a.objects) {
        auto it = b.objects.find(name);
        ASSERT_NE(it, b.objects.end()) << "object lost";
        const ObjectInfo &p = it->second;
        EXPECT_EQ(o.name, p.name);
        EXPECT_EQ(o.dtype, p.dtype);
        EXPECT_EQ(o.shape, p.shape);
        EXPECT_EQ(o.bytes, p.bytes);
        EXPECT_EQ(o.block, p.block);
        EXPECT_EQ(o.crc32c, p.crc32c);
        EXPECT_EQ(o.generation, p.generation);
    }
    ASSERT_EQ(a.reservations.size(), b.reservations.size());
    for (const auto &[id, r] : a.reservations) {
        auto it = b.reservations.find(id);
        ASSERT_NE(it, b.reservations.end()) << "reservation lost";
        EXPECT_EQ(r.block, it->second.block);
        EXPECT_EQ(r.blocks, it->second.blocks);
        EXPECT_EQ(r.time, it->second.time);
        EXPECT_EQ(r.owner, it->second.owner);
    }
}

}  // namespace

TEST(Catalog, EncodeDecodeRoundTrips)
{
    std::mt19937_64 g(1);
    for (int round = 0; round < 300; round++) {
        const cat::Contents c = random_contents(g);
        const std::vector<uint8_t> bytes = cat::encode(c);
        cat::Contents back;
        ASSERT_TRUE(cat::decode(bytes.data(), bytes.size(), cat::kFormat2, &back)) << "round " << round;
        expect_same(c, back);
        EXPECT_EQ(cat::encode(back), bytes);
    }
}

TEST(Catalog, NoTruncationDecodes)
{
    std::mt19937_64 g(2);
    for (int round = 0; round < 40; round++) {
        const std::vector<uint8_t> bytes = cat::encode(random_contents(g));
        for (size_t n = 0; n < bytes.size(); n++) {
            cat::Contents out;
            ASSERT_FALSE(cat::decode(bytes.data(), n, cat::kFormat2, &out)) << n << " of " << bytes.size();
        }
        std::vector<uint8_t> longer = bytes;
        longer.push_back(0);
        cat::Contents out;
        EXPECT_FALSE(cat::decode(longer.data(), longer.size(), cat::kFormat2, &out)) << "trailing byte accepted";
    }
}

TEST(Catalog, DamagedBytesNeverCrashAndDecodeConsistently)
{
    std::mt19937_64 g(3);
    for (int round = 0; round < 2000; round++) {
        std::vector<uint8_t> bytes = cat::encode(random_contents(g));
        for (int k = 0; k < 1 + static_cast<int>(g() % 4); k++) bytes[g() % bytes.size()] = static_cast<uint8_t>(g());
        cat::Contents out;
        if (cat::decode(bytes.data(), bytes.size(), cat::kFormat2, &out)) {
            const std::vector<uint8_t> again = cat::encode(out);
            cat::Contents out2;
            ASSERT_TRUE(cat::decode(again.data(), again.size(), cat::kFormat2, &out2));
            expect_same(out, out2);
        }
    }
}

TEST(Catalog, FormatOneHasNoReservations)
{
    std::mt19937_64 g(4);
    cat::Contents c = random_contents(g);
    c.reservations.clear();
    std::vector<uint8_t> v2 = cat::encode(c);
    std::vector<uint8_t> v1(v2.begin(), v2.end() - 4);  // format 1: the objects only
    cat::Contents back;
    ASSERT_TRUE(cat::decode(v1.data(), v1.size(), cat::kFormat1, &back));
    expect_same(c, back);
    EXPECT_FALSE(cat::decode(v1.data(), v1.size(), 3, &back)) << "unknown format accepted";
}

TEST(Catalog, JournalAppliesLikeTheModel)
{
    std::mt19937_64 g(5);
    for (int round = 0; round < 200; round++) {
        cat::Contents model = random_contents(g), applied = model;
        std::vector<uint8_t> journal;
        for (int k = 0; k < 30; k++) {
            std::vector<uint8_t> e;
            switch (g() % 4) {
            case 0: {  // put, sometimes of an existing name, sometimes consuming a reservation
                ObjectInfo o = random_object(g);
                if (!model.objects.empty() && g() % 2) o.name = model.objects.begin()->first;
                uint64_t res = 0;
                if (!model.reservations.empty() && g() % 2) res = model.reservations.begin()->first;
                e = cat::put_entry(o, res);
                model.reservations.erase(res);
                model.objects[o.name] = o;
                break;
            }
            case 1: {
                const std::string name = model.objects.empty() || g() % 4 == 0 ? random_string(g, 10, true)
                                                                               : model.objects.rbegin()->first;
                e = cat::remove_entry(name);
                model.objects.erase(name);
                break;
            }
            case 2: {
                const Reservation r = random_reservation(g);
                e = cat::reserve_entry(r);
                model.reservations[r.id] = r;
                break;
            }
            default: {
                const uint64_t id = model.reservations.empty() ? g() : model.reservations.begin()->first;
                e = cat::release_entry(id);
                model.reservations.erase(id);
            }
            }
            journal.insert(journal.end(), e.begin(), e.end());
        }
        ASSERT_TRUE(cat::apply(journal.data(), journal.size(), &applied));
        expect_same(model, applied);
        // A journal cut inside its last entry is refused (whole entries only).
        cat::Contents scratch;
        EXPECT_FALSE(cat::apply(journal.data(), journal.size() - 1, &scratch));
    }
}

TEST(Catalog, RefusesAtPutWhatItCannotReadBack)
{
    EXPECT_NO_THROW(cat::check_entry(std::string(255, 'n'), std::string(255, 'd'), std::vector<uint64_t>(32, 1)));
    EXPECT_THROW(cat::check_entry(std::string(256, 'n'), "", {}), Error);
    EXPECT_THROW(cat::check_entry("", "", {}), Error);
    EXPECT_THROW(cat::check_entry(std::string("a\0b", 3), "", {}), Error);
    EXPECT_THROW(cat::check_entry("x", std::string(256, 'd'), {}), Error);
    EXPECT_THROW(cat::check_entry("x", "", std::vector<uint64_t>(33, 1)), Error);
    // What check_entry accepts at its limits round-trips.
    cat::Contents c;
    ObjectInfo o;
    o.name = std::string(255, 'n');
    o.dtype = std::string(255, 'd');
    o.shape = std::vector<uint64_t>(32, 7);
    c.objects[o.name] = o;
    const auto bytes = cat::encode(c);
    cat::Contents back;
    ASSERT_TRUE(cat::decode(bytes.data(), bytes.size(), cat::kFormat2, &back));
    expect_same(c, back);
}
