"""sessiontree.core.doctor: checking (`check`) and repairing (`repair`) session files;
what is found and done is in `report`."""

from .check import check_bytes, check_file, default_blobs_dir, read_regular_file
from .repair import quarantine_name, repair_file, repaired_bytes
from .report import KINDS, UNUSABLE_KINDS, DoctorError, DoctorReport, Problem, RepairResult

__all__ = [
    "KINDS",
    "UNUSABLE_KINDS",
    "DoctorError",
    "DoctorReport",
    "Problem",
    "RepairResult",
    "check_bytes",
    "check_file",
    "default_blobs_dir",
    "quarantine_name",
    "read_regular_file",
    "repair_file",
    "repaired_bytes",
]
