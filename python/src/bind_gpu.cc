// SPDX-License-Identifier: MIT
// bind_gpu.cc - the GPU part for Python: landing SLM and objects in GPU memory, the pipeline's
// settings, and GpuLayerLoader; the same names without the GPU part, refusing.
#include <tuple>

#ifdef CSD_HAVE_GPU
#include "layer_loader.hpp"
#endif
#include "bindings.hpp"

namespace pycsd {

void bind_gpu(py::module_ &m)
{
#ifdef CSD_HAVE_GPU
    m.attr("has_gpu_part") = true;
    m.def("gpu_available", [] { return gpu::available(); });
    auto report = [](const gpu::CopyReport &r) { return py::make_tuple(r.path, r.bytes, r.seconds); };
    m.def("gpu_slm_to_gpu", [report](PyDevice &p, uint64_t off, uint64_t len, uintptr_t dst, uintptr_t stream, bool direct) {
        const Use u(p);
        gpu::CopyReport r;
        {
            py::gil_scoped_release g;
            r = u.land()->slm_to_gpu(off, len, reinterpret_cast<void *>(dst), reinterpret_cast<cudaStream_t>(stream), direct).get();
        }
        return report(r);
    });
    // (path, bytes, seconds, generation of the version that landed)
    m.def("gpu_object_to_gpu", [](PyDevice &p, const std::string &name, uintptr_t dst, uint64_t dst_bytes, uintptr_t stream) {
        const Use u(p);
        const auto s = u.store();
        gpu::CopyReport r;
        {
            py::gil_scoped_release g;
            r = u.land()->object_to_gpu(*s, name, reinterpret_cast<void *>(dst), dst_bytes, reinterpret_cast<cudaStream_t>(stream)).get();
        }
        return py::make_tuple(r.path, r.bytes, r.seconds, r.object.generation);
    });
    m.def("gpu_configure", [](PyDevice &p, uint64_t chunk, int buffers, int readers) {
        const Use u(p);  // a new pipeline (a call under way keeps the old one)
        auto fresh = std::make_shared<gpu::Landing>(u.d(), chunk, buffers, readers);
        std::lock_guard<std::mutex> g(p.mu);
        p.landing = std::move(fresh);
    });
#else
    // The same functions, refusing: the module (and its stubs) look the same either way.
    m.attr("has_gpu_part") = false;
    m.def("gpu_available", [] { return false; });
    const auto no_gpu = [] { return Error("this nvme_csd was built without CUDA", ENODEV); };
    m.def("gpu_slm_to_gpu", [no_gpu](PyDevice &, uint64_t, uint64_t, uintptr_t, uintptr_t,
                                     bool) -> std::tuple<std::string, uint64_t, double> {
        throw no_gpu();
    });
    m.def("gpu_object_to_gpu", [no_gpu](PyDevice &, const std::string &, uintptr_t, uint64_t,
                                        uintptr_t) -> std::tuple<std::string, uint64_t, double, uint64_t> {
        throw no_gpu();
    });
    m.def("gpu_configure", [no_gpu](PyDevice &, uint64_t, int, int) { throw no_gpu(); });
#endif
}

// csd::gpu::LayerLoader for nvme_csd.gpu.LayerLoader: the same class with or without the GPU
// part (without, making one raises), so that _core and its stubs look the same either way.
using LayerTensors = std::vector<std::vector<std::tuple<std::string, uint64_t, uint64_t>>>;
struct PyLayerLoader {
#ifdef CSD_HAVE_GPU
    // what the loader uses, kept while it lives (a closed device stays until the loader goes)
    std::shared_ptr<Device> dev;
    std::shared_ptr<ObjectStore> store;
    std::shared_ptr<gpu::Landing> land;
    std::vector<std::unique_ptr<gpu::Landing>> extra;  // lanes beyond the device's landing
    std::unique_ptr<gpu::LayerLoader> loader;
    gpu::LayerLoader &get()
    {
        if (!loader) throw Error("the layer loader is closed", EBADF);
        return *loader;
    }
#endif
    // Stops the loader thread and waits for its GPU work (call with the GIL released).
    void close()
    {
#ifdef CSD_HAVE_GPU
        loader.reset();
        extra.clear();
        land.reset();
        store.reset();
        dev.reset();
#endif
    }
    ~PyLayerLoader() { close(); }
};

void bind_layer_loader(py::module_ &m)
{
    [[maybe_unused]] const auto no_gpu = [] { return Error("this nvme_csd was built without CUDA", ENODEV); };
    py::class_<PyLayerLoader>(m, "GpuLayerLoader", "csd::gpu::LayerLoader: use nvme_csd.gpu.LayerLoader")
        .def(py::init([no_gpu](PyDevice &p, const LayerTensors &layers, const std::vector<uint64_t> &layer_bytes,
                               const std::vector<int> &resident, const std::vector<uintptr_t> &buffers,
                               const std::vector<uint64_t> &buffer_bytes, bool direct, int lanes) {
#ifdef CSD_HAVE_GPU
                 if (layers.size() != layer_bytes.size()) throw Error("layers and layer_bytes differ in length", EINVAL);
                 std::vector<gpu::LayerPlan> plans(layers.size());
                 for (size_t i = 0; i < layers.size(); i++) {
                     for (const auto &[name, offset, bytes] : layers[i]) plans[i].tensors.push_back({name, offset, bytes});
                     plans[i].bytes = layer_bytes[i];
                 }
                 std::vector<void *> ptrs;
                 for (uintptr_t b : buffers) ptrs.push_back(reinterpret_cast<void *>(b));
                 auto l = std::make_unique<PyLayerLoader>();
                 const Use u(p);
                 l->dev = u.keep();
                 l->store = u.store();
                 l->land = u.land();
                 if (lanes < 1) throw Error("lanes must be at least 1", EINVAL);
                 py::gil_scoped_release g;
                 std::vector<gpu::Landing *> use{l->land.get()};
                 for (int i = 1; i < lanes; i++) {
                     l->extra.push_back(std::make_unique<gpu::Landing>(*l->dev));
                     use.push_back(l->extra.back().get());
                 }
                 l->loader = std::make_unique<gpu::LayerLoader>(use, *l->store, std::move(plans), resident, ptrs,
                                                                 buffer_bytes, direct);
                 return l;
#else
                 (void)p, (void)layers, (void)layer_bytes, (void)resident, (void)buffers, (void)buffer_bytes, (void)direct,
                     (void)lanes;
                 throw no_gpu();
                 return std::unique_ptr<PyLayerLoader>();
#endif
             }),
             py::arg("dev"), py::arg("layers"), py::arg("layer_bytes"), py::arg("resident"), py::arg("buffers"),
             py::arg("buffer_bytes"), py::arg("direct") = true, py::arg("lanes") = 1)
        // the address of layer i's buffer once landed and checked (waits without the GIL)
        .def("acquire", [no_gpu](PyLayerLoader &l, int layer, uintptr_t stream) -> uintptr_t {
#ifdef CSD_HAVE_GPU
            gpu::LayerLoader &x = l.get();
            py::gil_scoped_release g;
            return reinterpret_cast<uintptr_t>(x.acquire(layer, reinterpret_cast<cudaStream_t>(stream)));
#else
            (void)l, (void)layer, (void)stream;
            throw no_gpu();
#endif
        }, py::arg("layer"), py::arg("stream"))
        .def("release", [no_gpu](PyLayerLoader &l, int layer, uintptr_t stream) {
#ifdef CSD_HAVE_GPU
            l.get().release(layer, reinterpret_cast<cudaStream_t>(stream));
#else
            (void)l, (void)layer, (void)stream;
            throw no_gpu();
#endif
        }, py::arg("layer"), py::arg("stream"))
        // every landing so far: dicts of layer, pass, buffer, resident, bytes, start, wait, land, stall, path
        .def("timings", [no_gpu](PyLayerLoader &l) {
            py::list out;
#ifdef CSD_HAVE_GPU
            for (const gpu::LayerTiming &t : l.get().timings()) {
                py::dict d;
                d["layer"] = t.layer;
                d["pass"] = t.pass;
                d["buffer"] = t.buffer;
                d["resident"] = t.resident;
                d["bytes"] = t.bytes;
                d["start"] = t.start;
                d["wait"] = t.wait;
                d["land"] = t.land;
                d["stall"] = t.stall;
                d["path"] = t.path;
                out.append(d);
            }
#else
            (void)l;
            throw no_gpu();
#endif
            return out;
        })
        .def("clear_timings", [no_gpu](PyLayerLoader &l) {
#ifdef CSD_HAVE_GPU
            l.get().clear_timings();
#else
            (void)l;
            throw no_gpu();
#endif
        })
        .def_property_readonly("restarts", [no_gpu](PyLayerLoader &l) -> uint64_t {
#ifdef CSD_HAVE_GPU
            return l.get().restarts();
#else
            (void)l;
            throw no_gpu();
#endif
        })
        .def("close", [](PyLayerLoader &l) {
            py::gil_scoped_release g;
            l.close();
        });
}

}  // namespace pycsd
