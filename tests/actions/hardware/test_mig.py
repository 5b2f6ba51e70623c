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


# NVIDIA mig-parted, commit bd7160f43f16462eeb21e1eda5e67b5b6b03fd7d (2026-08-21):
# deployments/systemd/config-default.yaml, each all-<profile> config under the comment naming its
# GPUs and each GPU's all-balanced entry by PCI device ID, with the commits that added them
# (B200 a7dc7c4b and 453b5af4; GB200 HGX 89dd81a3 and ebab1f77; GH200 144G HBM3e 8cdf60f9 and
# 5af180da; RTX PRO 6000 Blackwell 9e0382f5), and pkg/mig/builder/builder_test.go's gpuProfiles
# (A30, A100 40/80 GB, H100 80/94/96 GB, H200, B200, RTX PRO 6000), both transcribed here by hand.
MIG_PARTED = {
    ("A30", 24): ("1g.6gb", "2g.12gb", "4g.24gb"),
    ("A100", 40): ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    ("A100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("H100", 80): ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    ("H100", 94): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),  # "# H100 NVL, H800 NVL"
    ("H100", 96): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
    ("H200", 141): ("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
    ("B200", 180): ("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb"),
    ("GB200", 186): ("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb"),  # "# GB200 HGX"
    ("GH200", 96): ("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),  # "..., GH200"
    ("GH200", 144): ("1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),  # "# GH200 144G HBM3e"
    ("H20", 96): ("1g.12gb", "2g.24gb", "3g.48gb"),  # all-balanced, device 0x232910DE
    ("RTXPRO6000", 96): ("1g.24gb", "2g.48gb", "4g.96gb"),  # "# RTX PRO 6000 Blackwell"
}


def test_every_row_of_the_mig_table_is_mig_parteds():
    from actions.hardware.mig import MIG_PROFILES

    assert MIG_PROFILES == MIG_PARTED


def test_an_h100_nvl_gets_its_own_profiles_not_the_80_gb_h100s():
    # NVML names it "NVIDIA H100 NVL", no memory in the name; its datasheet's 94 GB
    # (actions/hardware/specs.py) picks its row.
    assert gpu_variant("NVIDIA H100 NVL") == ("H100", 94)
    assert gpu_variant("NVIDIA-H100-NVL-MIG-1g.12gb") == ("H100", 94)  # GFD under single: the parent's
    fit = smallest_profile("NVIDIA H100 NVL", peak_fb_mib=30 * 1024, peak_engine_pct=20)
    # 30 GiB x 1.1 = 33,792 MiB: not 1g.24gb (22,888 MiB); 3g.47gb (44,822 MiB), never the 80 GB's 3g.40gb.
    assert fit.profile == "3g.47gb" and fit.resource == "nvidia.com/mig-3g.47gb"
    assert smallest_profile("NVIDIA H100 NVL", 6144, 9).profile == "1g.12gb"


def test_the_newer_gpus_have_their_profiles_from_their_names():
    assert gpu_variant("NVIDIA GB200") == ("GB200", 186)
    assert smallest_profile("NVIDIA GB200", 15000, 10).profile == "1g.23gb"  # 16,500 <= 21,934 MiB
    assert smallest_profile("NVIDIA GB200", 20000, 10).profile == "1g.47gb"  # 22,000 > 21,934 MiB
    assert gpu_variant("NVIDIA GH200 144G HBM3e") == ("GH200", 144)
    assert smallest_profile("NVIDIA GH200 144G HBM3e", 20000, 10).profile == "1g.36gb"  # 1g.18gb holds 17,166
    # "480GB" is no GH200 variant mig-parted knows: no profile is guessed for it.
    assert gpu_variant("NVIDIA GH200 480GB") is None and smallest_profile("NVIDIA GH200 480GB", 6144, 9) is None
    assert gpu_variant("NVIDIA H20") == ("H20", 96)
    assert smallest_profile("NVIDIA H20", 6144, 9).profile == "1g.12gb"
    rtx = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    assert gpu_variant(rtx) == ("RTXPRO6000", 96)
    fit = smallest_profile(rtx, 20000, 20)
    assert (fit.profile, fit.slices, fit.gpu_slices, fit.share) == ("1g.24gb", 1, 4, 0.25)


def test_offered_profiles_decide_and_their_variants_are_named_as_the_device_plugin_does():
    rtx = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    fit = smallest_profile(rtx, 20000, 20, offered=["nvidia.com/mig-1g.24gb.gfx", "nvidia.com/mig-2g.48gb"])
    assert (fit.profile, fit.resource) == ("1g.24gb", "nvidia.com/mig-1g.24gb.gfx")
    # The plain profile wins over a variant of it.
    fit = smallest_profile(rtx, 20000, 20, offered=["nvidia.com/mig-1g.24gb-me", "nvidia.com/mig-1g.24gb"])
    assert fit.resource == "nvidia.com/mig-1g.24gb"
    # Only a larger profile offered: that one.
    assert smallest_profile(H100, 6144, 9, offered=["nvidia.com/mig-3g.40gb"]).profile == "3g.40gb"
    assert smallest_profile(H100, 6144, 9, offered=[]) is None
