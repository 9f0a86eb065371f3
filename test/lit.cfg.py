# -*- Python -*-
# lit configuration of the pmlir regression tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "pmlir"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.pmlir_binary_dir, "test")
config.excludes = ["CMakeLists.txt", "README.md", "lit.cfg.py", "Inputs", "reference.py", "ops.py",
                   "grad_ops.py"]

llvm_config.use_default_substitutions()
config.substitutions.append(("%pmlir_src", config.pmlir_source_dir))
config.substitutions.append(("%pmlir_build", config.pmlir_binary_dir))
# The reference implementations use Debian's python3-torch; a machine whose
# PyTorch lives elsewhere (the GPU machines' bundle, scripts/gpu-check.sh)
# names its Python in PMLIR_TEST_PYTHON.
config.substitutions.append(("%python", os.environ.get("PMLIR_TEST_PYTHON", "/usr/bin/python3")))

# The GPU target runs ptxas from the CUDA toolkit CUDA_HOME names (default
# /usr/local/cuda) when pmlir-run compiles for --device gpu.
if "CUDA_HOME" in os.environ:
    config.environment["CUDA_HOME"] = os.environ["CUDA_HOME"]
# OpenMPI's settings from the environment: a machine without ssh (the lent
# GPU machines set OMPI_MCA_plm=isolated) launches local ranks only so, and
# mpirun refuses to start without them.
for name, value in os.environ.items():
    if name.startswith(("OMPI_MCA_", "OPAL_", "PMIX_MCA_")):
        config.environment[name] = value

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.pmlir_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["pmlir-opt", "pmlir-gen", "pmlir-run", "pmlir-plan"], [config.pmlir_tools_dir]
)

if config.pmlir_has_cuda:
    config.available_features.add("cuda")
    # Where the build found cuBLASLt, which the runtime loads for GPU runs
    # (the GPU bundle's site configuration has none).
    config.substitutions.append(
        ("%cublaslt_dir", getattr(config, "pmlir_cublaslt_dir", ""))
    )
if config.pmlir_has_nccl:
    config.available_features.add("nccl")
# A GPU that CUDA programs can use: nvidia-smi lists it.
try:
    import subprocess
    if subprocess.run(["nvidia-smi", "-L"], capture_output=True, timeout=30).returncode == 0:
        config.available_features.add("gpu")
except (OSError, subprocess.SubprocessError):
    pass

# A mount namespace of one's own (root with CAP_SYS_ADMIN): the GPU bundle's
# test hides the system's LLVM and MLIR libraries in one.
try:
    import subprocess
    if subprocess.run(["unshare", "-m", "mount", "-t", "tmpfs", "none", "/mnt"],
                      capture_output=True, timeout=30).returncode == 0:
        config.available_features.add("mountns")
except (OSError, subprocess.SubprocessError):
    pass

# Network namespaces joined by a bridge (root with CAP_NET_ADMIN and
# CAP_SYS_ADMIN, iproute2): the multi-host test builds its hosts from them.
try:
    import subprocess
    if subprocess.run(["unshare", "--net", "--mount", "sh", "-c",
                       "ip link add pmlirbr0 type bridge && "
                       "ip link add pmlirv0 type veth peer name pmlirv1 && "
                       "mount -t tmpfs none /dev/shm && command -v nsenter"],
                      capture_output=True, timeout=30).returncode == 0:
        config.available_features.add("netns")
except (OSError, subprocess.SubprocessError):
    pass

# Making a character device (root, with CAP_MKNOD): the output tests write
# through a scratch copy of /dev/null.
try:
    import stat
    import tempfile
    with tempfile.TemporaryDirectory() as scratch:
        os.mknod(os.path.join(scratch, "null"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
        config.available_features.add("mknod")
except (OSError, AttributeError):
    pass

# AVX-512 BF16 (the kernel's flags are what cpuid and the OS's saved
# registers allow): bf16 GEMMs run on oneDNN's native kernels there.
# avx512: AVX-512 F, DQ, BW and VL, where f32 GEMMs run on oneDNN.
# amx: AMX's tiles, where bf16 GEMMs may take oneDNN's matmul primitive.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line for line in cpuinfo if line.startswith("flags")), "")
    if " avx512_bf16" in flags:
        config.available_features.add("avx512_bf16")
    if " amx_tile" in flags:
        config.available_features.add("amx")
    if all(f" {f}" in flags for f in ("avx512f", "avx512dq", "avx512bw", "avx512vl")):
        config.available_features.add("avx512")
except OSError:
    pass

# The cores this process may run on, as a rank alone on its host counts
# them for its threads.
config.substitutions.append(("%cores", str(len(os.sched_getaffinity(0)))))

# Multi-rank tests: ranks on this host, more ranks than cores allowed, each
# job with a temporary directory of its own (Inputs/private_tmpdir.sh says
# why). mpirun refuses root without the explicit opt-in (CI containers run
# as root); containers may forbid the cross-process memory copy of
# shared-memory transport, which the tests do not need.
mpirun = ("sh " + os.path.join(config.test_source_root, "Inputs", "private_tmpdir.sh") +
          " mpirun --oversubscribe --bind-to none "
          "--mca btl_vader_single_copy_mechanism none")
if os.geteuid() == 0:
    mpirun += " --allow-run-as-root"
config.substitutions.append(("%mpirun", mpirun))
# The suite runs several multi-rank tests at once on few cores: a rank that
# waits sleeps after 100 us instead of busy-polling the core away from the
# rank it waits for (docs/performance.md). mpirun passes it to local ranks.
config.environment["PMLIR_RT_SPIN_US"] = "100"
# What --predict measures of the host goes to the suite's own profile cache,
# not the user's (~/.cache/pmlir).
config.environment["PMLIR_PROFILE_CACHE"] = os.path.join(
    config.test_exec_root, "pmlir-profile-cache.json")
# The same for the compiled objects pmlir-run keeps: a program the suite
# compiled once (in another test, or on another rank) is loaded, not
# compiled again.
config.environment["PMLIR_OBJECT_CACHE"] = os.path.join(config.test_exec_root, "object-cache")
config.substitutions.append(
    ("%collectives_check",
     os.path.join(config.pmlir_binary_dir, "unittests", "pmlir-rt-collectives-check")))
