#!/usr/bin/env python3
"""profiles.py — ctest xla_driver.profiles_match_target_configs: fxplain's device profiles h100 and
a100 describe the same GPU as the XLA target configs the references are made with
(scripts/xla/h100.txtpb, a100.txtpb), field by field; a cost model and a fusion budget computed on
other numbers than XLA's would disagree with XLA for no reason of its rules.

Reads each config's gpu_device_info and `fxplain --json -e 'set device NAME; show device'`.
Needs python3 only (no jax). Usage: profiles.py FXPLAIN REPO_ROOT
"""
import json
import os
import re
import subprocess
import sys

# fxplain's field <- XLA's gpu_device_info field (scaled to fxplain's unit).
SAME = [("sm_count", "core_count", 1), ("max_threads_per_block", "threads_per_block_limit", 1),
        ("shared_mem_per_block", "shared_memory_per_block", 1),
        ("registers_per_sm", "registers_per_core_limit", 1),
        ("registers_per_block", "registers_per_block_limit", 1),
        ("max_threads_per_sm", "threads_per_core_limit", 1),
        ("shared_mem_per_sm", "shared_memory_per_core", 1),
        ("shared_mem_per_block_optin", "shared_memory_per_block_optin", 1),
        ("l2_cache_bytes", "l2_cache_size", 1), ("fpus_per_sm", "fpus_per_core", 1),
        ("clock_ghz", "clock_rate_ghz", 1), ("dram_gbps", "memory_bandwidth", 1e-9)]


def device_info(path):
    """gpu_device_info's scalar fields (two-space indented) and its compute capability."""
    text = open(path).read()
    block = text[text.index("gpu_device_info {"):]
    fields = {k: float(v) for k, v in re.findall(r"^  (\w+): (-?[\d.e+]+)$", block, re.M)}
    cc = re.search(r"cuda_compute_capability \{(.*?)\}", block, re.S).group(1)
    major = re.search(r"major: (\d+)", cc)
    minor = re.search(r"minor: (\d+)", cc)
    fields["cc"] = (int(major.group(1)) if major else 0, int(minor.group(1)) if minor else 0)
    fields["threads_per_warp"] = float(re.search(r"threads_per_warp: (\d+)", block).group(1))
    return fields


def close(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1.0)


def main():
    fxplain, root = sys.argv[1], sys.argv[2]
    bad = 0
    for name in ("h100", "a100"):
        cfg = os.path.join(root, "scripts", "xla", name + ".txtpb")
        xla = device_info(cfg)
        out = subprocess.run([fxplain, "--json", "-e", f"set device {name}; show device"],
                             capture_output=True, text=True, check=True).stdout
        fx = json.loads(out.strip().splitlines()[-1])
        checks = [(mine, fx[mine], xla[theirs] * scale, theirs) for mine, theirs, scale in SAME]
        # Derived: fxplain's f32 peak is XLA's 2 flops x fpus_per_core x core_count x clock.
        checks.append(("peak_gflops", fx["peak_gflops"],
                       2 * xla["fpus_per_core"] * xla["core_count"] * xla["clock_rate_ghz"],
                       "2 x fpus_per_core x core_count x clock_rate_ghz"))
        checks.append(("arch", fx["arch"], "sm_%d%d" % xla["cc"], "cuda_compute_capability"))
        # What XLA assumes of every NVIDIA GPU rather than reading from the config.
        checks.append(("l1_cache_bytes_per_sm", fx["l1_cache_bytes_per_sm"], 2048,
                       "DeviceDescription::l1_cache_size_per_SM()"))
        checks.append(("warp size 32", 32, xla["threads_per_warp"], "threads_per_warp"))
        for mine, got, want, theirs in checks:
            ok = got == want if isinstance(want, str) else close(float(got), float(want))
            if not ok:
                bad += 1
                print(f"{name}: {mine} is {got} in fxplain's profile, but XLA's target config "
                      f"{os.path.relpath(cfg, root)} says {want} ({theirs})")
        print(f"{name}: {len(checks)} fields checked against {os.path.relpath(cfg, root)}")
    if bad:
        print(f"{bad} fields differ: compiler/plan/device.c and scripts/xla/*.txtpb must describe the same GPU")
        return 1
    print("fxplain's h100 and a100 profiles agree with XLA's target configs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
