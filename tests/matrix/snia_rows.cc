// SPDX-License-Identifier: MIT
// The feature matrix's rows through the SNIA Computational Storage API (snia_rows.hpp): every
// row the API can send — namespace -> AFDM (a load storage request), AFDM -> namespace (a
// store), gather, embedding_bag and a downloaded program's chase (compute requests), a
// compute program over AFDM — with the cases and references of libcsd's rows.
#include "snia_rows.hpp"

#include <fstream>
#include <iterator>
#include <map>

#include "cs.h"
#include "csd/btree.hpp"
#include "csd_btree.h"
#include "csd_spec.h"

namespace csd_matrix {

namespace {

CS_DEV_HANDLE g_dev = nullptr;
CS_CSE_HANDLE g_cse = nullptr;

// A call of the API that did not succeed: its status and the library's words.
struct Refused {
    CS_STATUS status;
    std::string what;
};

// Throws Refused unless the call succeeded.
void call(CS_STATUS s, const std::string &what)
{
    if (s != CS_SUCCESS) throw Refused{s, what + ": " + csd_snia_last_error()};
}

// AFDM of this CSx, freed with the object.
struct Afdm {
    CS_MEM_HANDLE h = nullptr;
    uint64_t size = 0;
    explicit Afdm(uint64_t bytes) : size(bytes)
    {
        call(csAllocMem(g_dev, static_cast<int>(bytes), 0, &h, nullptr), "csAllocMem " + std::to_string(bytes));
    }
    Afdm(const Afdm &) = delete;
    Afdm &operator=(const Afdm &) = delete;
    ~Afdm()
    {
        if (h) csFreeMem(h);
    }
    // Host bytes into the allocation (a copy request to the device).
    void put(const void *p, uint64_t n)
    {
        CsCopyMemRequest r{CS_COPY_TO_DEVICE, const_cast<void *>(p), {h, 0}, static_cast<unsigned>(n)};
        call(csQueueCopyMemRequest(&r, nullptr, nullptr, nullptr, nullptr), "csQueueCopyMemRequest to the device");
    }
    // The allocation's first n bytes (a copy request from the device).
    std::vector<uint8_t> get(uint64_t n)
    {
        std::vector<uint8_t> v(n);
        CsCopyMemRequest r{CS_COPY_FROM_DEVICE, v.data(), {h, 0}, static_cast<unsigned>(n)};
        call(csQueueCopyMemRequest(&r, nullptr, nullptr, nullptr, nullptr), "csQueueCopyMemRequest from the device");
        return v;
    }
};

// A block I/O storage request: nlb LBAs from lba to (load) or from (store) the AFDM's start;
// the bytes it says it moved.
uint64_t storage(bool load, uint64_t lba, uint64_t nlb, Afdm &m)
{
    CsStorageRequest r{};
    r.Mode = CS_STORAGE_BLOCK_IO;
    r.DevHandle = g_dev;
    r.u.BlockIo.Type = load ? CS_STORAGE_LOAD_TYPE : CS_STORAGE_STORE_TYPE;
    r.u.BlockIo.StartLba = lba;
    r.u.BlockIo.NumBlocks = static_cast<u32>(nlb);
    r.u.BlockIo.DevMem = {m.h, 0};
    u64 comp = 0;
    call(csQueueStorageRequest(&r, nullptr, nullptr, nullptr, &comp),
         std::string("csQueueStorageRequest ") + (load ? "load" : "store"));
    return comp;
}

// One compute argument: AFDM (from byte offset `at`), or a 32- or 64-bit value.
struct Arg {
    CS_COMPUTE_ARG_TYPE type;
    CS_MEM_HANDLE mem;
    unsigned long at;
    uint64_t value;
};
// AFDM m from byte at on: one SLM range of the Execute.
Arg afdm(const Afdm &m, unsigned long at = 0) { return {CS_AFDM_TYPE, m.h, at, 0}; }
// Four bytes of the parameters.
Arg v32(uint32_t v) { return {CS_32BIT_VALUE_TYPE, nullptr, 0, v}; }
// Eight bytes of the parameters.
Arg v64(uint64_t v) { return {CS_64BIT_VALUE_TYPE, nullptr, 0, v}; }

// A synchronous compute request of function fid on the CSE; its CompValue.
uint64_t compute(CS_FUNCTION_ID fid, const std::vector<Arg> &args)
{
    std::vector<uint8_t> buf(sizeof(CsComputeRequest) + args.size() * sizeof(CsComputeArg));
    auto *req = reinterpret_cast<CsComputeRequest *>(buf.data());
    req->CSEHandle = g_cse;
    req->FunctionId = fid;
    req->NumArgs = static_cast<int>(args.size());
    for (size_t i = 0; i < args.size(); i++) {
        CsComputeArg &a = req->Args[i];
        a.Type = args[i].type;
        if (a.Type == CS_AFDM_TYPE) a.u.DevMem = {args[i].mem, args[i].at};
        else if (a.Type == CS_32BIT_VALUE_TYPE) a.u.Value32 = static_cast<u32>(args[i].value);
        else a.u.Value64 = args[i].value;
    }
    u64 comp = 0;
    call(csQueueComputeRequest(req, nullptr, nullptr, nullptr, &comp), "csQueueComputeRequest");
    return comp;
}

// The id of a function of the CSE's drive.
CS_FUNCTION_ID function(const char *name)
{
    CS_FUNCTION_ID id = 0;
    call(csGetFunction(g_cse, const_cast<char *>(name), nullptr, &id), std::string("csGetFunction ") + name);
    return id;
}

// ---------------------------------------------------------------- the rows
// namespace -> AFDM: a load storage request.
Outcome row_load(Ctx &c)
{
    const uint64_t lba = c.lba(kReadAt), nlb = c.lba(64 << 10);
    Afdm m(nlb * c.L());
    c.before_command();
    const uint64_t n = storage(true, lba, nlb, m);
    expect(n == nlb * c.L(), "the load says it moved " + std::to_string(n) + " bytes");
    expect(m.get(n) == c.stamps(lba, nlb), "AFDM does not hold the namespace's blocks (another block's words)");
    return ok();
}

// AFDM -> namespace: a store storage request, loaded back.
Outcome row_store(Ctx &c)
{
    const uint64_t lba = c.zoned ? c.fresh_lba : c.lba(kStoreAt), nlb = c.lba(64 << 10);
    const auto data = c.random_bytes(nlb * c.L());
    Afdm m(data.size()), back(data.size());
    m.put(data.data(), data.size());
    c.before_command();
    storage(false, lba, nlb, m);
    storage(true, lba, nlb, back);
    expect(back.get(data.size()) == data, "a load of the stored LBAs does not give the AFDM's bytes");
    c.landed(lba, data, "store");
    if (!c.zoned) {
        Afdm edge(c.L());
        storage(true, lba + nlb, 1, edge);
        expect(edge.get(c.L()) == c.stamps(lba + nlb, 1), "the block after the stored ones changed");
    }
    return ok();
}

// gather (0Bh) as a compute request: entries and output AFDM, count.
Outcome row_gather(Ctx &c)
{
    std::vector<csd_gather_entry> es;
    const std::vector<uint8_t> want = gather_case(c, &es);
    Afdm ent(es.size() * sizeof es[0]), out(want.size());
    ent.put(es.data(), ent.size);
    const CS_FUNCTION_ID fid = function("gather");
    c.before_command();
    const uint64_t n = compute(fid, {afdm(ent), afdm(out), v32(static_cast<uint32_t>(es.size())), v32(0)});
    expect(n == want.size(), "gathered " + std::to_string(n) + " bytes, not " + std::to_string(want.size()));
    expect(out.get(want.size()) == want, "gathered bytes differ from the namespace's (another block's words)");
    return ok();
}

// embedding_bag (0Ch) as a compute request: indices, offsets, no weights (an empty range at
// the output's end), output; the parameters field by field.
Outcome row_embedding_bag(Ctx &c)
{
    const EmbeddingBagCase e = embedding_bag_case(c);
    Afdm ib(e.indices.size() * 8), ob(e.offsets.size() * 8), out(e.want.size() * 4);
    ib.put(e.indices.data(), ib.size);
    ob.put(e.offsets.data(), ob.size);
    const CS_FUNCTION_ID fid = function("embedding_bag");
    c.before_command();
    compute(fid, {afdm(ib), afdm(ob), afdm(out, out.size), afdm(out), v64(e.spec.table_lba), v64(e.spec.num_rows),
                  v32(e.spec.row_dim), v32(static_cast<uint32_t>(e.spec.dtype)), v32(static_cast<uint32_t>(e.spec.mode)),
                  v32(CSD_EMB_I64), v32(e.spec.num_bags), v32(0)});
    const auto got = out.get(e.want.size() * 4);
    expect(std::memcmp(got.data(), e.want.data(), got.size()) == 0, "pooled rows differ from the namespace's");
    return ok();
}

// A chase of btree_lookup.o loaded with csDownload, over a B+-tree stored by store requests.
Outcome row_chase(Ctx &c)
{
    std::vector<uint64_t> keys, vals;
    chase_keys(&keys, &vals);
    const uint64_t at = c.zoned ? c.fresh_lba + 2 * c.zone_lbas : c.lba(kTreeAt);
    csd::BtreeLayout tree;
    const auto blocks = csd::btree_blocks(keys, vals, at, c.L(), 31, &tree);
    std::ifstream f(c.bpf_dir + "/btree_lookup.o", std::ios::binary);
    std::vector<uint8_t> image((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    expect(!image.empty(), "cannot read " + c.bpf_dir + "/btree_lookup.o");
    CsDownloadInfo dl{CS_BPF_PROGRAM, static_cast<int>(csd::kBtreeRecordSize), 0, 0, static_cast<int>(image.size()),
                      image.data()};
    call(csDownload(g_dev, &dl), "csDownload btree_lookup.o");
    struct Unload {  // the slot is given back however the row ends
        int slot;
        ~Unload()
        {
            CsDownloadInfo u{CS_BPF_PROGRAM, 0, slot, 1, 0, nullptr};
            csDownload(g_dev, &u);
        }
    } unload{dl.Index};
    Afdm tb(blocks.size()), out(sizeof(csd_bpf_chase_result));
    tb.put(blocks.data(), blocks.size());
    storage(false, at, blocks.size() / c.L(), tb);
    c.landed(at, blocks, "the tree's blocks");
    c.before_command();
    auto lookup = [&](uint64_t key) {
        return compute(static_cast<CS_FUNCTION_ID>(dl.Index),
                       {afdm(out), v32(std::max<uint32_t>(tree.depth, 1)), v32(CSD_BPF_CHASE), v32(2), v32(0),
                        v64(tree.root_lba), v64(key)});
    };
    for (size_t i = 0; i < keys.size(); i += 181) {
        const uint64_t v = lookup(keys[i]) & ~CSD_BPF_CHASE_DONE;
        expect(v == (BT_FOUND | vals[i]), "the chase for key " + std::to_string(keys[i]) + " answered " + std::to_string(v));
    }
    expect(!((lookup(11) & ~CSD_BPF_CHASE_DONE) & BT_FOUND), "a chase found key 11, which the tree does not hold");
    return ok("depth " + std::to_string(tree.depth));
}

// checksum (CRC-32C of 1 MiB of AFDM) as a compute request.
Outcome row_exec(Ctx &c)
{
    const auto data = c.random_bytes(1 << 20);
    Afdm m(data.size());
    m.put(data.data(), data.size());
    const CS_FUNCTION_ID fid = function("checksum");
    c.before_command();
    const uint64_t got = compute(fid, {afdm(m), v32(CSD_CKSUM_CRC32C)});
    expect(got == crc32c(data.data(), data.size()), "the CRC-32C differs from the host's");
    return ok();
}

const std::map<std::string, Outcome (*)(Ctx &)> kRows{{"load", row_load},
                                                     {"store", row_store},
                                                     {"gather", row_gather},
                                                     {"embedding_bag", row_embedding_bag},
                                                     {"chase", row_chase},
                                                     {"exec", row_exec}};

// A refusal of the API as an outcome: its status's name; a fatal error names nothing.
Outcome refusal(const Refused &r)
{
    if (r.status == CS_FATAL_ERROR) return fail("an error naming no status: " + r.what);
    return {"refused", csd_snia_status_name(r.status), r.what};
}

}  // namespace

bool snia_open(const std::string &path, Outcome *refused)
{
    try {
        char name[512];
        unsigned len = sizeof name;
        call(csGetCSxFromPath(const_cast<char *>(path.c_str()), &len, name), "csGetCSxFromPath " + path);
        call(csOpenCSx(name, nullptr, &g_dev), std::string("csOpenCSx ") + name);
        char cses[1024];
        len = sizeof cses;
        call(csGetCSEFromCSx(g_dev, &len, cses), "csGetCSEFromCSx");
        cses[std::strcspn(cses, ",")] = 0;
        call(csOpenCSE(cses, nullptr, &g_cse), std::string("csOpenCSE ") + cses);
        return true;
    } catch (const Refused &r) {
        *refused = refusal(r);
        return false;
    }
}

Outcome snia_row(const std::string &row, Ctx &c)
{
    auto it = kRows.find(row);
    if (it == kRows.end()) return fail("the SNIA API has no request for row " + row);
    try {
        return it->second(c);
    } catch (const Mismatch &m) {
        return fail(m.what());
    } catch (const Refused &r) {
        return refusal(r);
    } catch (const std::exception &e) {
        return fail(std::string("unexpected exception: ") + e.what());
    }
}

void snia_close()
{
    if (g_cse) csCloseCSE(g_cse);
    if (g_dev) csCloseCSx(g_dev);
    g_cse = nullptr;
    g_dev = nullptr;
}

}  // namespace csd_matrix
