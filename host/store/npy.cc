// SPDX-License-Identifier: MIT
// npy.cc - numpy dtype text and .npy files (csd/npy.hpp): a bounds-checked parser of the
// Python literals a .npy header is written in, and the dtype rules numpy's own loader
// (numpy.lib.format.descr_to_dtype) applies to them.
#include "csd/npy.hpp"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>

#include "csd/error.hpp"

namespace csd::npy {

namespace {

constexpr int kMaxDepth = 32;  // lists and tuples within each other (structures in structures)

[[noreturn]] void bad(const std::string &what) { throw Error(what, EINVAL); }

// The start of a long text, for error messages.
std::string snippet(const std::string &s)
{
    return s.size() <= 80 ? s : s.substr(0, 77) + "...";
}

uint64_t mul(uint64_t a, uint64_t b, const std::string &what)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) bad(what + ": more bytes than 64 bits can count");
    return r;
}

uint64_t add(uint64_t a, uint64_t b, const std::string &what)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) bad(what + ": more bytes than 64 bits can count");
    return r;
}

void put_utf8(std::string &o, uint32_t cp)
{
    if (cp < 0x80) {
        o += static_cast<char>(cp);
    } else if (cp < 0x800) {
        o += static_cast<char>(0xC0 | cp >> 6);
        o += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        o += static_cast<char>(0xE0 | cp >> 12);
        o += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        o += static_cast<char>(0xF0 | cp >> 18);
        o += static_cast<char>(0x80 | (cp >> 12 & 0x3F));
        o += static_cast<char>(0x80 | (cp >> 6 & 0x3F));
        o += static_cast<char>(0x80 | (cp & 0x3F));
    }
}

// A Python literal, as far as .npy headers use them.
struct Value {
    enum Kind { kStr, kInt, kBool, kList, kTuple, kDict } kind = kStr;
    std::string str;           // kStr, in UTF-8
    uint64_t num = 0;          // kInt; kBool: 0 or 1
    std::vector<Value> items;  // kList, kTuple; kDict: key, value, key, value, ...
};

// Parses one Python literal (str, non-negative int, True/False, list, tuple, dict) from
// UTF-8 text; every failure is a csd::Error naming the position.
class LiteralParser {
public:
    LiteralParser(const std::string &text, const char *what) : t_(text), what_(what) {}

    Value parse_all()
    {
        Value v = value(0);
        ws();
        if (p_ != t_.size()) fail("unexpected text after the value");
        return v;
    }

private:
    const std::string &t_;
    const char *what_;  // what the text is, for messages
    size_t p_ = 0;

    [[noreturn]] void fail(const std::string &why) const
    {
        bad(std::string(what_) + " '" + snippet(t_) + "': " + why + " (at character " + std::to_string(p_) + ")");
    }

    void ws()
    {
        while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\t' || t_[p_] == '\n' || t_[p_] == '\r')) p_++;
    }

    bool word(const char *w)
    {
        const size_t n = std::strlen(w);
        if (t_.compare(p_, n, w) != 0) return false;
        if (p_ + n < t_.size() && (std::isalnum(static_cast<unsigned char>(t_[p_ + n])) || t_[p_ + n] == '_')) {
            return false;
        }
        p_ += n;
        return true;
    }

    Value value(int depth)
    {
        if (depth > kMaxDepth) fail("nested more than " + std::to_string(kMaxDepth) + " deep");
        ws();
        if (p_ >= t_.size()) fail("a value is missing");
        const char c = t_[p_];
        if (c == '\'' || c == '"') return string();
        if (c >= '0' && c <= '9') return integer();
        if (c == '[') return sequence(depth, ']');
        if (c == '(') return sequence(depth, ')');
        if (c == '{') return dict(depth);
        Value v;
        v.kind = Value::kBool;
        if (word("True")) v.num = 1;
        else if (!word("False")) fail("not a string, number, True, False, list, tuple or dict");
        return v;
    }

    Value integer()
    {
        Value v;
        v.kind = Value::kInt;
        while (p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '9') {
            if (v.num > (UINT64_MAX - 9) / 10) fail("number too large");
            v.num = v.num * 10 + static_cast<uint64_t>(t_[p_++] - '0');
        }
        return v;
    }

    uint32_t hex_digits(int n)
    {
        uint32_t cp = 0;
        for (int i = 0; i < n; i++, p_++) {
            const char c = p_ < t_.size() ? t_[p_] : 0;
            const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
            if (d < 0) fail("bad hexadecimal escape");
            cp = cp << 4 | static_cast<uint32_t>(d);
        }
        return cp;
    }

    void code_point(std::string &out, uint32_t cp)
    {
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) fail("escape is not a Unicode character");
        put_utf8(out, cp);
    }

    // After a backslash inside a string.
    void escape(std::string &out)
    {
        if (p_ >= t_.size()) fail("unterminated string");
        const char c = t_[p_++];
        switch (c) {
        case '\n': return;  // line continuation
        case '\\': case '\'': case '"': out += c; return;
        case 'a': out += '\a'; return;
        case 'b': out += '\b'; return;
        case 'f': out += '\f'; return;
        case 'n': out += '\n'; return;
        case 'r': out += '\r'; return;
        case 't': out += '\t'; return;
        case 'v': out += '\v'; return;
        case 'x': code_point(out, hex_digits(2)); return;
        case 'u': code_point(out, hex_digits(4)); return;
        case 'U': code_point(out, hex_digits(8)); return;
        default: break;
        }
        if (c >= '0' && c <= '7') {
            uint32_t cp = static_cast<uint32_t>(c - '0');
            for (int i = 0; i < 2 && p_ < t_.size() && t_[p_] >= '0' && t_[p_] <= '7'; i++) {
                cp = cp * 8 + static_cast<uint32_t>(t_[p_++] - '0');
            }
            code_point(out, cp);
            return;
        }
        p_--;
        fail(std::string("escape \\") + c + " is not supported");
    }

    // One UTF-8 encoded character, checked (no overlong forms, no surrogates).
    void utf8(std::string &out)
    {
        const auto b0 = static_cast<unsigned char>(t_[p_]);
        const int n = b0 >= 0xC2 && b0 <= 0xDF ? 2 : b0 >= 0xE0 && b0 <= 0xEF ? 3 : b0 >= 0xF0 && b0 <= 0xF4 ? 4 : 0;
        if (n == 0 || p_ + static_cast<size_t>(n) > t_.size()) fail("not UTF-8");
        uint32_t cp = b0 & (0x7F >> n);
        for (int i = 1; i < n; i++) {
            const auto b = static_cast<unsigned char>(t_[p_ + static_cast<size_t>(i)]);
            if ((b & 0xC0) != 0x80) fail("not UTF-8");
            cp = cp << 6 | (b & 0x3F);
        }
        if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) {
            fail("not UTF-8");
        }
        out.append(t_, p_, static_cast<size_t>(n));
        p_ += static_cast<size_t>(n);
    }

    Value string()
    {
        const char q = t_[p_++];
        Value v;
        for (;;) {
            if (p_ >= t_.size()) fail("unterminated string");
            const auto c = static_cast<unsigned char>(t_[p_]);
            if (c == static_cast<unsigned char>(q)) break;
            if (c == '\n') fail("line break inside a string");
            if (c == '\\') {
                p_++;
                escape(v.str);
            } else if (c < 0x80) {
                v.str += static_cast<char>(c);
                p_++;
            } else {
                utf8(v.str);
            }
        }
        p_++;
        return v;
    }

    // A list ('[') or a tuple ('('); "(x)" without a comma is x itself, as in Python.
    Value sequence(int depth, char close)
    {
        p_++;
        Value v;
        v.kind = close == ']' ? Value::kList : Value::kTuple;
        bool comma = false;
        for (;;) {
            ws();
            if (p_ < t_.size() && t_[p_] == close) break;
            v.items.push_back(value(depth + 1));
            ws();
            if (p_ < t_.size() && t_[p_] == ',') {
                comma = true;
                p_++;
            } else if (p_ >= t_.size() || t_[p_] != close) {
                fail(std::string("expected ',' or '") + close + "'");
            }
        }
        p_++;
        if (close == ')' && v.items.size() == 1 && !comma) return std::move(v.items[0]);
        return v;
    }

    Value dict(int depth)
    {
        p_++;
        Value v;
        v.kind = Value::kDict;
        for (;;) {
            ws();
            if (p_ < t_.size() && t_[p_] == '}') break;
            v.items.push_back(value(depth + 1));
            ws();
            if (p_ >= t_.size() || t_[p_] != ':') fail("expected ':'");
            p_++;
            v.items.push_back(value(depth + 1));
            ws();
            if (p_ < t_.size() && t_[p_] == ',') p_++;
            else if (p_ >= t_.size() || t_[p_] != '}') fail("expected ',' or '}'");
        }
        p_++;
        return v;
    }
};

// A string as a Python literal (the quote Python's repr would choose).
void put_quoted(std::string &o, const std::string &s)
{
    const char q = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
    o += q;
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c == '\\' || c == static_cast<unsigned char>(q)) {
            o += '\\';
            o += ch;
        } else if (c == '\n') {
            o += "\\n";
        } else if (c == '\r') {
            o += "\\r";
        } else if (c == '\t') {
            o += "\\t";
        } else if (c < 0x20 || c == 0x7F) {
            char b[5];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            o += b;
        } else {
            o += ch;  // printable ASCII, and UTF-8 as it is
        }
    }
    o += q;
}

constexpr char kNative = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? '<' : '>';

// A numpy type string ("<f4", "|S3", ">M8[ns]"): checked, and in numpy's canonical form.
Dtype scalar(const std::string &s)
{
    const std::string what = "dtype '" + snippet(s) + "'";
    size_t p = 0;
    char order = '=';
    if (!s.empty() && std::strchr("<>|=", s[0])) order = s[p++];
    if (p >= s.size()) bad(what + ": no type after the byte order");
    char kind = s[p++];
    if (kind == 'O') {
        bad(what + " is an object dtype: its elements are references to Python objects, not bytes, and "
                   "cannot be stored (convert to numbers, fixed-size strings or records)");
    }
    const size_t digits = p;
    uint64_t n = 0;
    while (p < s.size() && s[p] >= '0' && s[p] <= '9') {
        if (n > 0xFFFFFFFFull) bad(what + ": size too large");
        n = n * 10 + static_cast<uint64_t>(s[p++] - '0');
    }
    if (!std::strchr("biufcmMSaUV", kind) || p == digits) {
        bad(what + " is not a numpy type string: a byte order (<, >, |), a kind (b i u f c m M S U V) "
                   "and a size, such as '<f4', '|u1', '>i8', '|S8', or a structured dtype's list of fields");
    }
    std::string unit;
    if ((kind == 'm' || kind == 'M') && p < s.size() && s[p] == '[') {
        const size_t close = s.find(']', p);
        if (close == std::string::npos || close + 1 != s.size()) bad(what + ": unit not closed by ']'");
        std::string u = s.substr(p + 1, close - p - 1);
        size_t q = 0;
        uint64_t mult = 0;
        while (q < u.size() && u[q] >= '0' && u[q] <= '9' && mult < 0xFFFFFFFFull) mult = mult * 10 + (u[q++] - '0');
        const std::string base = u.substr(q);
        static const std::set<std::string> units = {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs",
                                                    "as", "generic"};
        if (!units.count(base) || (q > 0 && mult == 0) || (q > 0 && base == "generic")) {
            bad(what + ": unknown time unit '" + u + "'");
        }
        unit = "[" + (q > 0 && mult != 1 ? std::to_string(mult) : std::string()) + base + "]";
        p = close + 1;
    }
    if (p != s.size()) bad(what + ": unexpected '" + s.substr(p) + "' after the size");
    auto sizes = [&](std::initializer_list<uint64_t> ok) {
        for (uint64_t k : ok) {
            if (n == k) return;
        }
        bad(what + ": no such size for kind '" + std::string(1, kind) + "'");
    };
    Dtype d;
    d.itemsize = n;
    switch (kind) {
    case 'b': sizes({1}); break;
    case 'i': case 'u': sizes({1, 2, 4, 8}); break;
    case 'f': sizes({2, 4, 8, 12, 16}); break;
    case 'c': sizes({8, 16, 24, 32}); break;
    case 'm': case 'M': sizes({8}); break;
    case 'U': d.itemsize = n * 4; [[fallthrough]];
    default:  // S, a, U, V
        if (n == 0) bad(what + ": a size of 0 (numpy's unsized flexible type) holds nothing");
        break;
    }
    if (kind == 'a') kind = 'S';
    const bool orderless = kind == 'b' || kind == 'S' || kind == 'V' || ((kind == 'i' || kind == 'u') && n == 1);
    const char o = orderless ? '|' : order == '<' || order == '>' ? order : kNative;
    d.type = std::string(1, o) + kind + std::to_string(n) + unit;
    return d;
}

Dtype from_value(const Value &v, const std::string &text);

// A structure: fields laid out in order (numpy's descr_to_dtype).
Dtype structure(const Value &list, const std::string &text)
{
    const std::string what = "dtype '" + snippet(text) + "'";
    Dtype d;
    std::set<std::string> used;
    uint64_t off = 0;
    for (const Value &item : list.items) {
        if (item.kind != Value::kTuple || item.items.size() < 2 || item.items.size() > 3) {
            bad(what + ": each field is a tuple (name, type) or (name, type, shape)");
        }
        Field f;
        const Value &name = item.items[0];
        if (name.kind == Value::kStr) {
            f.name = name.str;
        } else if (name.kind == Value::kTuple && name.items.size() == 2 && name.items[0].kind == Value::kStr &&
                   name.items[1].kind == Value::kStr && !name.items[0].str.empty()) {
            f.title = name.items[0].str;
            f.name = name.items[1].str;
        } else {
            bad(what + ": a field's name is a string or a (title, name) pair of strings");
        }
        const std::string fw = what + ", field '" + snippet(f.name) + "'";
        const Value &type = item.items[1];
        if (type.kind != Value::kStr && type.kind != Value::kList) {
            bad(fw + ": its type is a type string or a list of fields (a shape goes third)");
        }
        f.dtype = from_value(type, text);
        if (item.items.size() == 3) {
            const Value &shape = item.items[2];
            if (shape.kind == Value::kInt) {
                f.shape.push_back(shape.num);
            } else if (shape.kind == Value::kTuple) {
                for (const Value &dim : shape.items) {
                    if (dim.kind != Value::kInt) bad(fw + ": its shape is a tuple of non-negative integers");
                    f.shape.push_back(dim.num);
                }
            } else {
                bad(fw + ": its shape is a tuple of non-negative integers");
            }
            if (f.shape.size() > 32) bad(fw + ": more than 32 dimensions");
        }
        uint64_t size = f.dtype.itemsize;
        for (uint64_t dim : f.shape) size = mul(size, dim, fw);
        const bool padding = f.name.empty() && f.title.empty() && !f.dtype.structured() && f.dtype.type[1] == 'V';
        if (f.name.empty() && !padding) bad(fw + ": only void padding ('|Vn') fields may have an empty name");
        if (!padding) {
            if (!used.insert(f.name).second) bad(what + ": field name '" + snippet(f.name) + "' is used twice");
            if (!f.title.empty() && (f.title == f.name || !used.insert(f.title).second)) {
                bad(fw + ": title '" + snippet(f.title) + "' is already a name or title");
            }
        }
        f.offset = off;
        off = add(off, size, what);
        d.fields.push_back(std::move(f));
    }
    d.itemsize = off;
    return d;
}

Dtype from_value(const Value &v, const std::string &text)
{
    if (v.kind == Value::kStr) return scalar(v.str);
    if (v.kind == Value::kList) return structure(v, text);
    if (v.kind == Value::kTuple) {
        bad("dtype '" + snippet(text) + "' is a (type, shape) subarray: give the array that shape instead");
    }
    bad("dtype '" + snippet(text) + "' is neither a type string nor a list of fields");
}

void put_shape(std::string &o, const std::vector<uint64_t> &shape)
{
    o += '(';
    for (size_t i = 0; i < shape.size(); i++) {
        if (i) o += ", ";
        o += std::to_string(shape[i]);
    }
    if (shape.size() == 1) o += ',';
    o += ')';
}

// The dtype as a .npy 'descr' value (quoted when it is a type string).
void put_descr(std::string &o, const Dtype &d, bool quoted)
{
    if (!d.structured()) {
        if (quoted) put_quoted(o, d.type);
        else o += d.type;
        return;
    }
    o += '[';
    for (size_t i = 0; i < d.fields.size(); i++) {
        const Field &f = d.fields[i];
        if (i) o += ", ";
        o += '(';
        if (!f.title.empty()) {
            o += '(';
            put_quoted(o, f.title);
            o += ", ";
            put_quoted(o, f.name);
            o += ')';
        } else {
            put_quoted(o, f.name);
        }
        o += ", ";
        put_descr(o, f.dtype, true);
        if (!f.shape.empty()) {
            o += ", ";
            put_shape(o, f.shape);
        }
        o += ')';
    }
    o += ']';
}

Dtype from_text(const std::string &text)
{
    const size_t b = text.find_first_not_of(" \t\r\n"), e = text.find_last_not_of(" \t\r\n");
    if (b == std::string::npos) bad("empty dtype");
    const std::string t = text.substr(b, e - b + 1);
    if (t[0] == '[' || t[0] == '(' || t[0] == '\'' || t[0] == '"') {
        return from_value(LiteralParser(t, "dtype").parse_all(), t);
    }
    return scalar(t);
}

std::string latin1_to_utf8(const std::string &s)
{
    std::string o;
    o.reserve(s.size());
    for (const char c : s) put_utf8(o, static_cast<unsigned char>(c));
    return o;
}

}  // namespace

Dtype parse_dtype(const std::string &text) { return from_text(text); }

std::string to_text(const Dtype &dt)
{
    std::string o;
    put_descr(o, dt, false);
    return o;
}

std::string canonical_dtype(const std::string &text) { return to_text(from_text(text)); }

uint64_t itemsize(const std::string &text) { return from_text(text).itemsize; }

uint64_t array_bytes(const Dtype &dt, const std::vector<uint64_t> &shape)
{
    uint64_t n = dt.itemsize;
    for (uint64_t dim : shape) n = mul(n, dim, "an array of dtype '" + snippet(to_text(dt)) + "'");
    return n;
}

size_t header_size(const uint8_t *f, size_t n)
{
    if (n < 10 || std::memcmp(f, "\x93NUMPY", 6) != 0) bad("not a .npy file (no \\x93NUMPY magic)");
    const int major = f[6], minor = f[7];
    if (major < 1 || major > 3 || minor != 0) {
        bad(".npy format version " + std::to_string(major) + "." + std::to_string(minor) +
            " is not one numpy writes (1.0, 2.0 or 3.0)");
    }
    if (major == 1) return 10 + (f[8] | f[9] << 8);
    if (n < 12) bad("truncated .npy header");
    return 12 + (f[8] | f[9] << 8 | f[10] << 16 | static_cast<size_t>(f[11]) << 24);
}

Header parse_header(const uint8_t *f, size_t n)
{
    const size_t total = header_size(f, n), hstart = f[6] == 1 ? 10 : 12, hlen = total - hstart;
    if (total > n) bad("truncated .npy header");
    std::string h(reinterpret_cast<const char *>(f) + hstart, hlen);
    if (f[6] < 3) h = latin1_to_utf8(h);  // versions 1 and 2 are Latin-1, 3 is UTF-8
    const Value v = LiteralParser(h, ".npy header").parse_all();
    if (v.kind != Value::kDict) bad(".npy header is not a dict");
    const Value *descr = nullptr, *fortran = nullptr, *shape = nullptr;
    for (size_t i = 0; i < v.items.size(); i += 2) {
        const Value &k = v.items[i];
        const Value **slot = k.kind != Value::kStr ? nullptr
                             : k.str == "descr" ? &descr : k.str == "fortran_order" ? &fortran
                             : k.str == "shape" ? &shape : nullptr;
        if (!slot) bad(".npy header: unexpected key (only 'descr', 'fortran_order' and 'shape')");
        if (*slot) bad(".npy header: key '" + k.str + "' twice");
        *slot = &v.items[i + 1];
    }
    if (!descr || !fortran || !shape) bad(".npy header lacks 'descr', 'fortran_order' or 'shape'");
    Header out;
    if (shape->kind != Value::kTuple) bad(".npy header: 'shape' is not a tuple of integers");
    for (const Value &dim : shape->items) {
        if (dim.kind != Value::kInt) bad(".npy header: 'shape' is not a tuple of integers");
        out.shape.push_back(dim.num);
    }
    if (fortran->kind != Value::kBool) bad(".npy header: 'fortran_order' is not True or False");
    if (fortran->num && out.shape.size() > 1) {
        bad(".npy in Fortran order is not supported: save np.ascontiguousarray(a) instead");
    }
    if (descr->kind != Value::kStr && descr->kind != Value::kList) {
        bad(".npy header: 'descr' is neither a type string nor a list of fields");
    }
    Dtype dt;
    try {
        dt = from_value(*descr, descr->kind == Value::kStr ? descr->str : h);
    } catch (const Error &e) {
        throw Error(".npy header", e);
    }
    out.data_bytes = array_bytes(dt, out.shape);
    out.dtype = to_text(dt);
    out.size = total;
    return out;
}

Array parse(const std::vector<uint8_t> &f)
{
    const Header h = parse_header(f.data(), f.size());
    const uint64_t have = f.size() - h.size;
    if (have != h.data_bytes) {
        bad(".npy data is " + std::to_string(have) + " bytes; its header's dtype and shape describe " +
            std::to_string(h.data_bytes));
    }
    Array out{h.dtype, h.shape, {}};
    out.data.assign(f.begin() + static_cast<long>(h.size), f.end());
    return out;
}

std::vector<uint8_t> header(const std::string &dtype, const std::vector<uint64_t> &shape)
{
    const Dtype dt = from_text(dtype);
    array_bytes(dt, shape);  // throws on overflow
    std::string h = "{'descr': ";
    put_descr(h, dt, true);
    h += ", 'fortran_order': False, 'shape': ";
    put_shape(h, shape);
    h += ", }";
    bool ascii = true;
    for (const char c : h) ascii = ascii && static_cast<unsigned char>(c) < 0x80;
    // numpy's own choice: 1.0 where the header fits, 3.0 (UTF-8) for names beyond ASCII
    const int version = !ascii ? 3 : h.size() + 11 < 65536 - 64 ? 1 : 2;
    const size_t prefix = version == 1 ? 10 : 12;
    while ((prefix + h.size() + 1) % 64) h += ' ';
    h += '\n';
    std::vector<uint8_t> file = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(version), 0};
    for (size_t i = 0; i < prefix - 8; i++) file.push_back(static_cast<uint8_t>(h.size() >> (8 * i)));
    file.insert(file.end(), h.begin(), h.end());
    return file;
}

std::vector<uint8_t> format(const std::string &dtype, const std::vector<uint64_t> &shape,
                            const std::vector<uint8_t> &data)
{
    const Dtype dt = from_text(dtype);
    const uint64_t need = array_bytes(dt, shape);
    if (need != data.size()) {
        std::string s;
        put_shape(s, shape);
        bad("dtype '" + snippet(to_text(dt)) + "' and shape " + s + " describe " + std::to_string(need) +
            " bytes, not " + std::to_string(data.size()));
    }
    std::vector<uint8_t> file = header(dtype, shape);
    file.insert(file.end(), data.begin(), data.end());
    return file;
}

}  // namespace csd::npy
