"""Every MIG resource name is read the same everywhere (actions/hardware/mig_names.py), in each form
its upstream writer gives it:

- NVML / mig-parted profile names, ``+`` and ``-`` attributes: NVIDIA/go-nvlib v0.12.0
  pkg/nvlib/device/mig_profile.go (``MigProfileInfo.String``: ``<G>g.<GB>gb`` then ``+me``,
  ``+me.all``, ``+gfx`` or ``-me``), as vendored by NVIDIA/k8s-device-plugin v0.20.0 (commit
  1b826acc); the RTX PRO 6000 Blackwell's ``1g.24gb+gfx``, ``1g.24gb+me.all``, ``1g.24gb-me``:
  NVIDIA/mig-parted deployments/systemd/config-default.yaml (commit bd7160f4, "# RTX PRO 6000
  Blackwell").
- The device plugin's resource: k8s-device-plugin internal/rm/rm.go
  ``strings.ReplaceAll("mig-"+p.String(), "+", ".")`` under ``nvidia.com/``; mig-parted
  pkg/mig/builder/builder_test.go ``TestNormalizeProfileName`` gives the same pairs
  (``1g.10gb+me`` -> ``1g.10gb.me``, ``1g.24gb+me.all`` -> ``1g.24gb.me.all``, ``1g.24gb-me`` stays).
- GFD's product: internal/lm/resource.go ``baseLabeler(count, model, "MIG", migProfile)`` joined
  with ``-``, the profile being the MIG device's name (internal/resource/nvml-mig-device.go
  ``GetName``: ``+`` -> ``.``); internal/lm/mig-strategy_test.go: ``MOCKMODEL-MIG-1g.100gb``.
- kube-state-metrics v2.20.0 (commit c92fe0c5) internal/store/utils.go ``SanitizeLabelName``:
  ``[^a-zA-Z0-9_]`` -> ``_``, applied to the ``resource`` label of
  ``kube_pod_container_resource_requests`` (internal/store/pod.go).
"""

from __future__ import annotations

import re

import pytest

from actions.hardware.gpus import gpu_equivalents, mig_fraction, mig_profile, resource_from_ksm, sharing_of
from actions.hardware.mig_names import MigName, gfd_name, parent_product, parse_mig


def ksm(resource: str) -> str:
    """kube-state-metrics' SanitizeLabelName, as upstream writes it."""
    return re.sub(r"[^a-zA-Z0-9_]", "_", resource)


# (NVML profile, device plugin resource, parsed)
FORMS = [
    ("1g.10gb", "nvidia.com/mig-1g.10gb", MigName(1, 10)),
    ("1g.10gb+me", "nvidia.com/mig-1g.10gb.me", MigName(1, 10, ("me",))),
    ("1g.24gb+gfx", "nvidia.com/mig-1g.24gb.gfx", MigName(1, 24, ("gfx",))),
    ("1g.24gb+me.all", "nvidia.com/mig-1g.24gb.me.all", MigName(1, 24, ("me.all",))),
    ("1g.24gb-me", "nvidia.com/mig-1g.24gb-me", MigName(1, 24, removed=("me",))),
    ("2g.48gb+gfx", "nvidia.com/mig-2g.48gb.gfx", MigName(2, 48, ("gfx",))),
    ("4g.96gb+gfx", "nvidia.com/mig-4g.96gb.gfx", MigName(4, 96, ("gfx",))),
    ("7g.186gb", "nvidia.com/mig-7g.186gb", MigName(7, 186)),
]


@pytest.mark.parametrize("profile, resource, parsed", FORMS)
def test_each_writers_form_reads_as_one_profile(profile, resource, parsed):
    assert parse_mig(profile) == parsed and parsed.profile == profile
    assert parse_mig(resource) == parsed and parsed.resource == resource  # the device plugin's "+" -> "."
    assert parse_mig(f"MIG {profile}") == parsed  # nvidia-smi
    assert parse_mig(f"NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-{parsed.device_name}") == parsed  # GFD
    # kube-state-metrics loses "+" against "-": the slices and memory stay.
    from_ksm = parse_mig(ksm(resource))
    assert (from_ksm.slices, from_ksm.memory_gb, from_ksm.base) == (parsed.slices, parsed.memory_gb, parsed.base)
    assert parsed.ksm_resource == ksm(resource)


def test_the_rtx_pro_6000_variants_that_kube_state_metrics_writes_are_gpu_resources():
    # These fell out of the chargeback: the old pattern knew only "<N>g_<M>gb" and "_me".
    assert resource_from_ksm("nvidia_com_mig_1g_24gb_gfx") == "nvidia.com/mig-1g.24gb.gfx"
    assert resource_from_ksm("nvidia_com_mig_1g_24gb_me_all") == "nvidia.com/mig-1g.24gb.me.all"
    assert resource_from_ksm("nvidia_com_mig_1g_24gb_me") == "nvidia.com/mig-1g.24gb.me"
    assert resource_from_ksm("nvidia_com_mig_4g_96gb_gfx") == "nvidia.com/mig-4g.96gb.gfx"
    # The device plugin names 1g.10gb+me "nvidia.com/mig-1g.10gb.me", not "+me".
    assert resource_from_ksm("nvidia_com_mig_1g_10gb_me") == "nvidia.com/mig-1g.10gb.me"
    assert resource_from_ksm("nvidia_com_gpu") == "nvidia.com/gpu"
    assert resource_from_ksm("nvidia_com_mig_big") is None and resource_from_ksm("cpu") is None


def test_shares_and_sharing_read_every_form_alike():
    # RTX PRO 6000 Blackwell has 4 slices (mig-parted: 4g.96gb is the whole GPU).
    for name in ("nvidia.com/mig-1g.24gb.gfx", "nvidia.com/mig-1g.24gb-me", "nvidia.com/mig-1g.24gb.me.all",
                 "nvidia_com_mig_1g_24gb_me_all", "1g.24gb+gfx"):
        assert mig_fraction(name, "RTXPRO6000") == 0.25
        assert mig_profile(name) == "1g.24gb"
    assert gpu_equivalents({"nvidia.com/mig-2g.48gb.gfx": 1}, "RTXPRO6000") == 0.5
    assert sharing_of({"nvidia.com/mig-1g.24gb-me": 2}) == "MIG 1g.24gb"
    single = "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition-MIG-1g.24gb.gfx"  # GFD under single
    assert gpu_equivalents({"nvidia.com/gpu": 4}, "RTXPRO6000", product=single) == 1.0
    with pytest.raises(ValueError, match="not a MIG profile"):
        mig_fraction("nvidia.com/gpu", "H100")


def test_what_is_not_a_profile_is_none():
    for text in ("nvidia.com/gpu", "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "1g.10gb+", "1g.10gb+1x", "big", ""):
        assert parse_mig(text) is None, text


def test_gfd_names_and_parents():
    # k8s-device-plugin internal/lm/resource.go sanitise: [^A-Za-z0-9-_. ] dropped, spaces as "-".
    assert gfd_name("NVIDIA H100 80GB HBM3") == "NVIDIA-H100-80GB-HBM3"
    assert gfd_name("NVIDIA RTX PRO 6000 Blackwell Server Edition") == "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"
    assert parent_product("NVIDIA-H100-NVL-MIG-1g.12gb") == "NVIDIA-H100-NVL"
    assert parent_product("NVIDIA-H100-NVL") == "NVIDIA-H100-NVL"
