"""Node allocatable against AKS's published reservation table (notes/anchors.md Q3)."""

from __future__ import annotations

import pytest

from upstream.aks import (
    VM_SIZES,
    VmShape,
    cpu_reserved_millis,
    lookup_vm,
    memory_reserved_mib,
    node_allocatable,
    pool_capacity,
)


@pytest.mark.parametrize(
    ("cores", "reserved"),
    [(1, 60), (2, 100), (4, 140), (8, 180), (16, 260), (32, 420), (64, 740)],
)
def test_cpu_reservation_hits_every_published_point(cores: int, reserved: int) -> None:
    assert cpu_reserved_millis(cores) == reserved


# Worked numbers of the AKS doc's formula (>= 1.29), from notes/anchors.md Q3.
@pytest.mark.parametrize(
    ("size", "max_pods", "cpu", "memory"),
    [
        ("Standard_D2s_v5", 30, 1900, 7442),
        ("Standard_D2s_v5", 110, 1900, 6044),
        ("Standard_D4s_v5", 30, 3860, 15634),
        ("Standard_D4s_v5", 110, 3860, 14034),
        ("Standard_D4s_v5", 250, 3860, 12188),
        ("Standard_D8s_v5", 30, 7820, 32018),
        ("Standard_D8s_v5", 250, 7820, 27618),
        ("Standard_D16s_v5", 110, 15740, 63186),
        ("Standard_D16s_v5", 250, 15740, 60386),
    ],
)
def test_allocatable_matches_worked_numbers(
    size: str, max_pods: int, cpu: int, memory: int
) -> None:
    node = node_allocatable(VM_SIZES[size], max_pods)
    assert (node.cpu_millis, node.memory_mib) == (cpu, memory)


def test_memory_reservation_is_capped_at_a_quarter() -> None:
    assert memory_reserved_mib(8192, 250) == 2048 + 100


def test_pool_maximum_is_node_times_max_count() -> None:
    cap = pool_capacity("Standard_NC24ads_A100_v4", VM_SIZES["Standard_NC24ads_A100_v4"], 30, 0, 8)
    assert cap.max_gpus == 8
    assert cap.max_cpu_millis == 8 * (24000 - cpu_reserved_millis(24))
    assert cap.max_of("cpu") == cap.max_cpu_millis
    assert cap.max_of("ephemeral-storage") is None


def test_families_cover_d_e_f_and_gpu_sizes() -> None:
    for size in ("Standard_D2s_v5", "Standard_D64ds_v5", "Standard_E96as_v5", "Standard_F72s_v2"):
        assert size in VM_SIZES
    assert VM_SIZES["Standard_E96s_v5"] == VmShape(96, 672 * 1024)
    assert lookup_vm("standard_d4s_v5") == VM_SIZES["Standard_D4s_v5"]
    custom = {"Standard_X1": VmShape(3, 1024)}
    assert lookup_vm("Standard_X1", custom) == VmShape(3, 1024)
    assert lookup_vm("Standard_X1") is None
