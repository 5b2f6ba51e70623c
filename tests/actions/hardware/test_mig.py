"""MIG profile fits, per NVIDIA's Multi-Instance GPU user guide ("Supported MIG Profiles": A100
40GB 1g.5gb..7g.40gb, A100/H100 80GB 1g.10gb..7g.80gb, H200 1g.18gb..7g.141gb, A30 1g.6gb..4g.24gb)."""

from __future__ import annotations

import pytest

from actions.hardware.mig import MIB_PER_GB, gpu_variant, profile_memory_mib, smallest_profile

H100 = "NVIDIA H100 80GB HBM3"  # the real H100's NVML name (shared/data h100_identity.json)


def test_the_variant_comes_from_the_name_and_only_mig_capable_gpus_have_one():
    assert gpu_variant(H100) == ("H100", 80)
    assert gpu_variant("NVIDIA A100-SXM4-40GB") == ("A100", 40)
    assert gpu_variant("NVIDIA A100-SXM4-80GB") == ("A100", 80)
    assert gpu_variant("NVIDIA H200") == ("H200", 141)
    assert gpu_variant("NVIDIA L40S") is None  # no MIG on Ada
    assert gpu_variant("Tesla T4") is None


def test_a_6_gib_notebook_at_9_percent_fits_1g_10gb_on_an_h100():
    fit = smallest_profile(H100, peak_fb_mib=6144, peak_engine_pct=9)
    assert fit is not None and fit.profile == "1g.10gb"
    # By hand: 6144 MiB x 1.1 = 6758.4 MiB needed; 10 GB = 10e9 / 2^20 = 9536.7 MiB held.
    assert fit.needed_mib == pytest.approx(6758.4)
    assert fit.memory_mib == pytest.approx(9536.74, abs=0.01)
    assert fit.share == pytest.approx(1 / 7)
    assert fit.resource == "nvidia.com/mig-1g.10gb"


def test_memory_and_compute_each_push_the_profile_up():
    # 9 GiB x 1.1 = 10137.6 MiB > 1g.10gb's 9536.7: the 20 GB one of one slice.
    assert smallest_profile(H100, 9 * 1024, 5).profile == "1g.20gb"
    # 20% activity needs 2 of 7 slices (28.6%).
    assert smallest_profile(H100, 4096, 20).profile == "2g.20gb"
    # 50% needs 4 slices.
    assert smallest_profile(H100, 4096, 50).profile == "4g.40gb"
    # Needing the whole GPU is no advice.
    assert smallest_profile(H100, 4096, 90) is None
    assert smallest_profile(H100, 60 * 1024, 10) is None
    assert smallest_profile("NVIDIA A100-SXM4-40GB", 3000, 5).profile == "1g.5gb"
    assert smallest_profile("NVIDIA H200", 15000, 5).profile == "1g.18gb"  # 16500 <= 17166 MiB
    assert smallest_profile("NVIDIA L4", 1000, 1) is None


def test_profile_memory_reads_decimal_gigabytes_and_refuses_other_names():
    assert profile_memory_mib("3g.40gb") == pytest.approx(40 * MIB_PER_GB)
    with pytest.raises(ValueError, match="1g.10gb"):
        profile_memory_mib("big")
