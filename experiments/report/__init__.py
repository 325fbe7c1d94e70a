"""The browsable HTML report of a run folder: ``medstrat report RUN_DIR``."""

from experiments.report.build import REPORT_NAME, build_report, write_report

__all__ = ["REPORT_NAME", "build_report", "write_report"]
