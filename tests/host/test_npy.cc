// SPDX-License-Identifier: MIT
// csd::npy alone (csd/npy.hpp): dtype text as numpy writes it in a .npy header, structured
// dtypes (nested, padded, big-endian, titles, subarrays), refusals, and .npy files. The same
// behaviour checked against numpy itself is python/tests/test_npy.py.
#include <gtest/gtest.h>

#include <cerrno>
#include <random>

#include "csd/error.hpp"
#include "csd/npy.hpp"

using namespace csd;

namespace {

// The EINVAL message of a refused dtype, or "" if it was accepted.
std::string refusal(const std::string &text)
{
    try {
        npy::canonical_dtype(text);
    } catch (const Error &e) {
        EXPECT_EQ(e.errnum(), EINVAL) << text;
        return e.what();
    }
    return "";
}

std::vector<uint8_t> bytes(const std::string &s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// A .npy file with this header text (padded as numpy pads) and data.
std::vector<uint8_t> npy_file(int version, const std::string &header, const std::vector<uint8_t> &data)
{
    std::string h = header;
    const size_t prefix = version == 1 ? 10 : 12;
    while ((prefix + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::vector<uint8_t> f = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
    for (size_t i = 0; i < prefix - 8; i++) f.push_back(static_cast<uint8_t>(h.size() >> (8 * i)));
    f.insert(f.end(), h.begin(), h.end());
    f.insert(f.end(), data.begin(), data.end());
    return f;
}

}  // namespace

// Whatever spelling numpy accepts is recorded as numpy.lib.format.dtype_to_descr writes it.
TEST(Npy, CanonicalTextIsNumpys)
{
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"<f4", "<f4"},
        {"f4", "<f4"},
        {"=i8", "<i8"},
        {"|f8", "<f8"},
        {">i1", "|i1"},
        {"<u1", "|u1"},
        {"<b1", "|b1"},
        {"a5", "|S5"},
        {"<S5", "|S5"},
        {"<V16", "|V16"},
        {">U3", ">U3"},
        {"'<f4'", "<f4"},
        {"  >c16 ", ">c16"},
        {"<M8[1s]", "<M8[s]"},
        {"<M8", "<M8"},
        {">m8[25ms]", ">m8[25ms]"},
        {"[('id','<u4'),(\"value\",'f4')]", "[('id', '<u4'), ('value', '<f4')]"},
        {"[('a', '>f8', 3)]", "[('a', '>f8', (3,))]"},
        {"[('a', '>f8', ())]", "[('a', '>f8')]"},
        {"[('a', '<i2'), ('b', [('x', '>f8'), ('y', '|u1', (3,))]), ('c', '<c8', (2, 2))]",
         "[('a', '<i2'), ('b', [('x', '>f8'), ('y', '|u1', (3,))]), ('c', '<c8', (2, 2))]"},
        {"[(('Title', 'a'), '<i4'), ('b', '|S3')]", "[(('Title', 'a'), '<i4'), ('b', '|S3')]"},
        {"[(\"it's\", '<i4'), ('tab\\there', '<i4')]", "[(\"it's\", '<i4'), ('tab\\there', '<i4')]"},
        {"[('\\u00e9\\x01', '<i4')]", "[('\xc3\xa9\\x01', '<i4')]"},
        {"[('q\"\\'', '<i4')]", "[('q\"\\'', '<i4')]"},
        {"[]", "[]"},
    };
    for (const auto &[in, want] : cases) {
        EXPECT_EQ(npy::canonical_dtype(in), want) << in;
        EXPECT_EQ(npy::canonical_dtype(want), want) << "canonical text is a fixed point: " << want;
    }
}

TEST(Npy, LayoutFollowsTheFields)
{
    EXPECT_EQ(npy::itemsize("<f4"), 4u);
    EXPECT_EQ(npy::itemsize(">U3"), 12u);
    EXPECT_EQ(npy::itemsize("[]"), 0u);
    EXPECT_EQ(npy::itemsize("[('a', '<i2'), ('b', [('x', '>f8'), ('y', '|u1', (3,))]), ('c', '<c8', (2, 2))]"), 45u);
    // offsets with gaps: numpy writes the gaps as void fields named ''
    const npy::Dtype d = npy::parse_dtype("[('', '|V4'), ('a', '<i4'), ('', '|V8'), ('b', '>f8'), ('', '|V8')]");
    ASSERT_TRUE(d.structured());
    ASSERT_EQ(d.fields.size(), 5u);
    EXPECT_EQ(d.itemsize, 32u);
    EXPECT_EQ(d.fields[1].name, "a");
    EXPECT_EQ(d.fields[1].offset, 4u);
    EXPECT_EQ(d.fields[3].name, "b");
    EXPECT_EQ(d.fields[3].offset, 16u);
    EXPECT_EQ(d.fields[3].dtype.type, ">f8");
    EXPECT_EQ(npy::array_bytes(d, {3, 2}), 192u);
    EXPECT_EQ(npy::array_bytes(d, {}), 32u);  // a 0-d array holds one element
    EXPECT_THROW(npy::array_bytes(d, {1ull << 62, 4}), Error);
}

TEST(Npy, RefusesWhatNumpyCouldNotLoadBack)
{
    EXPECT_NE(refusal("|O").find("object dtype"), std::string::npos) << refusal("|O");
    EXPECT_NE(refusal("[('a', '<i4'), ('o', '|O')]").find("object dtype"), std::string::npos);
    EXPECT_NE(refusal("[('n', [('o', '|O8')])]").find("object dtype"), std::string::npos);
    EXPECT_NE(refusal("[('a', '<i4'), ('a', '<f4')]").find("used twice"), std::string::npos);
    EXPECT_NE(refusal("('<f4', (2,))").find("subarray"), std::string::npos);
    for (const std::string &bad : std::vector<std::string>{
             "", "id", std::string(300, 'x'), "<f3", "<i3", "<b2", ">c4", "<M8[lightyears]", "<M8[0s]", "|S0", "<f4x",
          "float32", "[('', '<i4')]", "[(('a', 'a'), '<i4')]", "[(('', 'a'), '<i4')]", "[('a', '<i4', (-1,))]",
          "[('a', ('<i4', 2))]", "[('a',)]", "[('a', '<i4', (2,), 1)]", "[(1, '<i4')]", "[('a', '<i4')", "[('a', '<i4')] x",
          "[('a\\q', '<i4')]", "[('\\ud800', '<i4')]", "[('\xff', '<i4')]", "[('\xc0\x80', '<i4')]",
          "[('a', '<i4'), ('b', True)]", "{'a': '<i4'}", "[('a', '<i4', (99999999999999999999,))]",
          "[('a', '<i4', (4294967296, 4294967296))]"}) {
        EXPECT_NE(refusal(bad), "") << "accepted: " << bad;
    }
    std::string deep = "'<f4'";
    for (int i = 0; i < 40; i++) deep = "[('f', " + deep + ")]";
    EXPECT_NE(refusal(deep).find("nested more than"), std::string::npos) << refusal(deep);
}

TEST(Npy, FilesRoundTrip)
{
    const std::vector<std::pair<std::string, std::vector<uint64_t>>> cases = {
        {"<f4", {3, 2}},
        {">i8", {}},
        {"[('id', '<u4'), ('value', '<f4'), ('region', '<u4'), ('amount', '<f4')]", {5}},
        {"[('a', '|u1'), ('', '|V3'), ('b', '>i4'), ('c', [('x', '>f8'), ('y', '|u1', (3,))])]", {2, 2}},
        {"[('\xc3\xa9', '<i4')]", {4}},
        {"[('a', '<f4')]", {0, 7}},
    };
    for (const auto &[dtype, shape] : cases) {
        std::vector<uint8_t> data(npy::array_bytes(npy::parse_dtype(dtype), shape));
        for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<uint8_t>(i * 13 + 1);
        const auto file = npy::format(dtype, shape, data);
        const bool ascii = dtype.find('\xc3') == std::string::npos;
        EXPECT_EQ(file[6], ascii ? 1 : 3) << dtype;  // numpy reads a UTF-8 header from version 3
        const size_t hend = ascii ? 10 + (file[8] | file[9] << 8) : 12 + (file[8] | file[9] << 8);
        EXPECT_EQ(hend % 64, 0u) << dtype;
        EXPECT_EQ(file[hend - 1], '\n');
        const npy::Array a = npy::parse(file);
        EXPECT_EQ(a.dtype, dtype);
        EXPECT_EQ(a.shape, shape);
        EXPECT_EQ(a.data, data);
    }
    EXPECT_THROW(npy::format("<f4", {3}, std::vector<uint8_t>(11)), Error);  // 3 floats are 12 bytes
    EXPECT_THROW(npy::format("id", {2}, std::vector<uint8_t>(2)), Error);
    EXPECT_THROW(npy::format("|O", {1}, std::vector<uint8_t>(8)), Error);
}

// Headers as numpy writes them: version 1 in Latin-1, version 2 for long headers, 3 in UTF-8.
TEST(Npy, ReadsNumpysHeaders)
{
    const std::vector<uint8_t> six(6 * 8, 1);
    npy::Array a = npy::parse(npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 3), }", six));
    EXPECT_EQ(a.dtype, "<f8");
    EXPECT_EQ(a.shape, (std::vector<uint64_t>{2, 3}));
    a = npy::parse(npy_file(1, "{'descr': [('\xe9', '<i4')], 'fortran_order': False, 'shape': (2,), }",
                            std::vector<uint8_t>(8)));
    EXPECT_EQ(a.dtype, "[('\xc3\xa9', '<i4')]");  // Latin-1 e-acute, kept as UTF-8
    a = npy::parse(npy_file(3, "{'descr': [('\xc3\xa9', '<i4')], 'fortran_order': False, 'shape': (2,), }",
                            std::vector<uint8_t>(8)));
    EXPECT_EQ(a.dtype, "[('\xc3\xa9', '<i4')]");
    a = npy::parse(npy_file(2, "{'shape': (6,), 'fortran_order': True, 'descr': '>f8'}", six));
    EXPECT_EQ(a.dtype, ">f8");  // one dimension: Fortran order is C order
    EXPECT_EQ(a.data, six);
    for (const auto &bad : {npy_file(1, "{'descr': '<f8', 'fortran_order': True, 'shape': (2, 3), }", six),
                            npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (7,), }", six),
                            npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (5,), }", six),
                            npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': [6], }", six),
                            npy_file(1, "{'descr': '<f8', 'fortran_order': 0, 'shape': (6,), }", six),
                            npy_file(1, "{'descr': '<f8', 'shape': (6,), }", six),
                            npy_file(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), 'x': 1}", six),
                            npy_file(1, "{'descr': '|O', 'fortran_order': False, 'shape': (6,), }", six),
                            npy_file(1, "{'descr': ('<f8', (2,)), 'fortran_order': False, 'shape': (3,), }", six),
                            npy_file(4, "{'descr': '<f8', 'fortran_order': False, 'shape': (6,), }", six),
                            bytes(std::string("\x93NUMPY\x01\x00\xff\x00{", 11)), bytes("not a .npy file at all")}) {
        EXPECT_THROW(npy::parse(bad), Error);
    }
}

// Any bytes give a .npy array or csd::Error, never a crash (mutations of valid files).
TEST(Npy, AnyBytesParseOrFailCleanly)
{
    const auto good = npy::format("[('a', '|u1'), ('', '|V3'), ('b', [('x', '>f8'), ('y', '<U2', (3,))])]", {2},
                                  std::vector<uint8_t>(2 * 36, 5));
    std::mt19937 g(27);
    int parsed = 0;
    for (int i = 0; i < 20000; i++) {
        auto f = good;
        const int edits = 1 + static_cast<int>(g() % 4);
        for (int k = 0; k < edits; k++) {
            const size_t at = g() % f.size();
            switch (g() % 3) {
            case 0: f[at] = static_cast<uint8_t>(g()); break;
            case 1: f.erase(f.begin() + static_cast<long>(at)); break;
            default: f.insert(f.begin() + static_cast<long>(at), static_cast<uint8_t>("[(',)]'\\ 0|<V"[g() % 14])); break;
            }
        }
        try {
            const npy::Array a = npy::parse(f);
            EXPECT_EQ(a.data.size(), npy::array_bytes(npy::parse_dtype(a.dtype), a.shape));
            parsed++;
        } catch (const Error &e) {
            EXPECT_EQ(e.errnum(), EINVAL);
        }
    }
    EXPECT_GT(parsed, 0);
}
