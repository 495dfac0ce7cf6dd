// transport.cc - picks a backend for a path; the default asynchronous submit.
#include <cerrno>
#include <cstring>

#include "csd/error.hpp"
#include "transports.hpp"

namespace csd {

std::future<Completion> Transport::submit_async(const Command &cmd)
{
    return std::async(std::launch::async, [this, cmd] { return submit(cmd); });
}

std::unique_ptr<Transport> open_transport(const std::string &path, const OpenOptions &opts)
{
    if (path.rfind("emu:", 0) == 0) {
        return make_inproc_transport(path.substr(4));
    }
    if (path.rfind("/dev/csd", 0) == 0) {
        throw Error("open " + path + ": the kernel-module transport is not in this build", ENOTSUP);
    }
    if (path.rfind("/dev/", 0) != 0) {
        throw Error("open " + path + ": expected /dev/ngXnY, /dev/nvmeXnY or emu:<file>[?slm=64M&lba=512&cu=2&size=256M]",
                    EINVAL);
    }
#ifdef CSD_HAVE_PASSTHRU
    if (opts.use_uring) {
        return make_uring_transport(path, opts.queue_depth);
    }
    return make_ioctl_transport(path);
#else
    (void)opts;
    throw Error("open " + path + ": this libcsd was built without NVMe passthrough (no libnvme/liburing)", ENOTSUP);
#endif
}

}  // namespace csd
