# SPDX-License-Identifier: MIT
# nvme-csd: top-level orchestration. meson builds the project's own C/C++ (build/meson);
# this file fetches and builds everything around it. 'make help' lists the targets.
SHELL := /bin/bash
PYTHON ?= python3
MESON_BUILD := build/meson

.PHONY: all help deps qemu kernel image build kmod nvme-cli fio-engine guest vm demo test check fuzz test-% examples clean distclean venv deb test-deb test-fresh

all: qemu image build guest

help:
	@echo "make deps      install the Debian packages the project needs (root)"
	@echo "make qemu      fetch QEMU 10.0 source, patch it, build build/qemu/qemu-system-x86_64"
	@echo "make kernel    the guest kernel (Debian cloud 6.12), its headers and checkpatch.pl (build/images)"
	@echo "make image     the guest kernel and root filesystem from Debian packages"
	@echo "make build     the project's C/C++ (meson, build/meson)"
	@echo "make kmod      csd.ko for the guest kernel (build/kmod/csd.ko)"
	@echo "make nvme-cli  Debian's nvme-cli (the guest's version) with the 'nvme csd' plugin (build/nvme-cli/nvme)"
	@echo "make fio-engine  fio's external engine for the drive, against the guest's fio (build/fio/csd-fio.so)"
	@echo "make guest     stage csdctl, libcsd, csd.ko, nvme-cli and the tests for the guest (build/guest)"
	@echo "make demo      the main job: a dataset on the drive, questions answered in the drive and classically"
	@echo "make vm        interactive guest shell; make vm CMD='nvme list' runs one command;"
	@echo "               CSD_PROPS='csd.nvme-cs=on,csd.model=gen4x4-8core' DRIVES=2 PLUGINS=1 shape the device"
	@echo "               (PLUGINS=1: the example operator plug-ins, csd.plugin-dir)"
	@echo "               EXACT=1 (with a model in CSD_PROPS): completions exactly at the model's time;"
	@echo "               ICOUNT=N: guest time counted in instructions (-icount shift=N,sleep=off)"
	@echo "make test      every test suite; make test-SUITE runs one (unit, fuzz, qemu-fuzz, qtest,"
	@echo "               kmod-style, harness, runner, repo, python, vm, crash), building only what it needs"
	@echo "make check     the quick loop: repo, unit, qtest, python and one guest smoke test"
	@echo "make fuzz      long fuzz campaigns (FUZZ_SECONDS=600 per target; make test runs short ones)"
	@echo "make venv      build/venv with the nvme_csd package, numpy and matplotlib (source build/venv/bin/activate)"
	@echo "make examples  the example eBPF programs (examples/bpf/*.o) with Debian's clang"
	@echo "make deb       Debian packages and the Python wheel in build/deb (apt install ./build/deb/NAME.deb)"
	@echo "make test-deb  install them in a fresh Debian 12 root and smoke-test them (root)"
	@echo "make test-fresh  the README's first ten minutes as written (make demo, then the emu: recipe) in a"
	@echo "               fresh Debian 12 root with only git and make, from a clone of HEAD (root; 11-14 min)"

deps:
	@bash ci/deps.sh

# Debian packages (libcsd0, libcsd-dev, csdctl, nvme-csd-qemu, csd-dkms) and the wheel.
deb: deps
	@[ -x build/qemu/qemu-system-x86_64 ] || $(MAKE) qemu
	@[ -f build/images/nvme-private/nvme.h ] || $(MAKE) image
	@bash packaging/make-debs.sh

test-deb: deb guest
	@$(PYTHON) tests/run_all.py packages

# The README's first ten minutes in a fresh Debian 12 root: git and make, a clone of HEAD,
# then its recipes as written (tests/fresh/readme-first-ten-minutes.sh). Builds everything
# there itself, so it needs nothing built here.
test-fresh:
	@$(PYTHON) tests/run_all.py fresh

CORE_LIB := $(MESON_BUILD)/core/libcsd_core.a
qemu: build
	@bash qemu-device/build-qemu.sh --qtest --core-lib $(CORE_LIB) \
	    --core-libs $(MESON_BUILD)/core/csd_core_link_libs.txt

kernel: deps
	@bash images/fetch-kernel.sh

image: kernel
	@bash images/build-guest.sh

build: deps
	@if [ -f $(MESON_BUILD)/build.ninja ]; then true; else meson setup $(MESON_BUILD) --buildtype=release; fi
	@ninja -C $(MESON_BUILD)

kmod: image
	@bash kmod/build.sh

# nvme-cli from Debian's source of the version the guest ships, with the csd plugin
nvme-cli: deps
	@bash host/nvme-cli-plugin/build.sh

# fio's external engine (docs/fio.md), built against Debian's fio source of the guest's version
fio-engine: build
	@bash host/fio-engine/build.sh

guest: image build kmod nvme-cli fio-engine
	@bash images/stage-guest.sh

# CMD reaches the guest's shell as written ($(value CMD): make expands no $ in it, so
# CMD='x=hello; echo "[$x]"' prints [hello]) and any quoting survives; CSD_PROPS (more nvme
# device properties, e.g. csd.nvme-cs=on,csd.model=gen4x4-8core) and DRIVES too; PLUGINS=1
# loads the example operator plug-ins (csdvm.py --plugins: csd.plugin-dir); EXACT=1 holds the
# guest to the timing model's time (csd.exact=on, needs a model in CSD_PROPS) and ICOUNT=N
# counts guest time in instructions (-icount shift=N,sleep=off; docs/timing-model.md).
VM_FLAGS := $(if $(filter-out 0,$(PLUGINS)),--plugins)
vm: qemu image build guest
	@export CSD_PROPS="$(CSD_PROPS)" CSD_DRIVES="$(or $(DRIVES),1)" CSD_EXACT="$(EXACT)" CSD_ICOUNT="$(ICOUNT)"; \
	CMD='$(subst ','\'',$(value CMD))'; \
	if [ -n "$$CMD" ]; then $(PYTHON) tests/vm/csdvm.py cmd "$$CMD" $(VM_FLAGS); else $(PYTHON) tests/vm/csdvm.py shell $(VM_FLAGS); fi

demo: qemu image build guest
	@bash host/demo/run-demo.sh

test: qemu image build guest
	@$(PYTHON) tests/run_all.py

# The loop to live in: repo, unit, qtest, Python and one guest smoke test (docs/command-set.md's recipes).
check: qemu image build guest
	@$(PYTHON) tests/run_all.py check

# The project's Python environment, build/venv, with the nvme_csd package, numpy and
# matplotlib (what make demo needs; make test-python adds the test requirements).
venv: deps
	@bash python/install.sh demo

# Long fuzz campaigns (make test runs only short ones): FUZZ_SECONDS per target.
FUZZ_SECONDS ?= 600
fuzz: deps
	@bash tests/fuzz/run-fuzz.sh $(FUZZ_SECONDS)
	@bash tests/fuzz/run-qemu-fuzz.sh $(FUZZ_SECONDS) $$(nproc)

# One suite builds only what it needs.
SUITES_HOST := unit
SUITES_SELF_BUILT := fuzz qemu-fuzz python runner repo
SUITES_QEMU := qtest
SUITES_GUEST := harness vm crash
$(addprefix test-,$(SUITES_HOST)): test-%: build fio-engine
	@$(PYTHON) tests/run_all.py $*
$(addprefix test-,$(SUITES_SELF_BUILT)): test-%: deps
	@$(PYTHON) tests/run_all.py $*
$(addprefix test-,$(SUITES_QEMU)): test-%: qemu
	@$(PYTHON) tests/run_all.py $*
$(addprefix test-,$(SUITES_GUEST)): test-%: qemu image build guest
	@$(PYTHON) tests/run_all.py $*
# checkpatch.pl and the kernel headers (the broken-build check), nothing else.
test-kmod-style: kernel
	@$(PYTHON) tests/run_all.py kmod-style

examples:
	@$(MAKE) -C examples/bpf

clean:
	rm -rf build

# Also drops the cached QEMU build, downloads and kernels (~/.cache/nvme-csd).
distclean: clean
	rm -rf $${CSD_CACHE:-$$HOME/.cache/nvme-csd}
