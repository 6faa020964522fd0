"""scripts/test-times: the slowest-tests table docs/testing.md keeps, from pytest's JUnit XML."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from testkit.repo import ROOT

SCRIPT = ROOT / "scripts" / "test-times"

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest" tests="5">
<testcase classname="tests.realtier.test_pulumi_engine" name="test_up" time="120.5">
  <properties><property name="phases" value="{&quot;engine&quot;: 80.25, &quot;twins&quot;: 30.0}"/>
  </properties></testcase>
<testcase classname="tests.realtier.test_faults_deploy" name="test_killed_up" time="311.2"/>
<testcase classname="tests.realtier.test_kruise" name="test_skipped" time="0.01">
  <skipped message="no tools"/></testcase>
<testcase classname="tests.realtier.test_karmada" name="test_broken" time="42.0">
  <failure message="boom"/></testcase>
<testcase classname="tests.test_config" name="test_offline" time="999.0"/>
</testsuite></testsuites>
"""


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, check=False
    )


def test_the_table_lists_real_tier_tests_slowest_first(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text(JUNIT, encoding="utf-8")
    result = run("--xml", str(xml), "--limit", "2")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `test_faults_deploy::test_killed_up` | 311.2 | - | - | - | passed |",
        "| `test_pulumi_engine::test_up` | 120.5 | 80.2 | 30.0 | 10.2 | passed |",
    ]
    # skipped tests are listed but not counted; the offline test is not real-tier
    assert result.stdout.startswith("3 real-tier tests ran, 474 s in tests")
    every = run("--xml", str(xml), "--all")
    assert "| `test_config::test_offline` | 999.0 | - | - | - | passed |" in every.stdout
    assert "| `test_karmada::test_broken` | 42.0 | - | - | - | failed |" in every.stdout


def test_write_replaces_only_the_marked_block(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text(JUNIT, encoding="utf-8")
    doc = tmp_path / "testing.md"
    doc.write_text(
        "# T\nbefore\n<!-- test-times:begin -->\nold table\n<!-- test-times:end -->\nafter\n",
        encoding="utf-8",
    )
    result = run("--xml", str(xml), "--write", str(doc))
    assert result.returncode == 0, result.stderr
    text = doc.read_text(encoding="utf-8")
    assert "old table" not in text
    assert text.startswith("# T\nbefore\n<!-- test-times:begin -->\n3 real-tier tests ran")
    assert text.endswith("<!-- test-times:end -->\nafter\n")


def test_docs_testing_has_the_block_and_a_missing_xml_is_a_message(tmp_path: Path) -> None:
    text = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert text.count("<!-- test-times:begin -->") == 1
    assert text.count("<!-- test-times:end -->") == 1
    result = run("--xml", str(tmp_path / "absent.xml"))
    assert result.returncode == 2
    assert "run scripts/check first" in result.stderr


SCHEDULE = '''"""docstring"""

from typing import Final

# Paths under tests/, longest first. Seconds: an old run.
LONGEST_FIRST: Final = (
    "realtier/test_old.py",  # 1
)

TESTS: Final = 1
'''


def test_write_schedule_orders_files_by_this_runs_seconds(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    ran = JUNIT.replace('<skipped message="no tools"/>', "")
    xml.write_text(ran, encoding="utf-8")
    target = tmp_path / "schedule.py"
    target.write_text(SCHEDULE, encoding="utf-8")
    result = run("--xml", str(xml), "--write-schedule", str(target))
    assert result.returncode == 0, result.stderr
    text = target.read_text(encoding="utf-8")
    block = text.split("LONGEST_FIRST: Final = (\n", 1)[1].split("\n)\n", 1)[0]
    # Every real-tier file by its seconds, and the offline files slow enough to matter.
    assert block.splitlines() == [
        '    "test_config.py",  # 999',
        '    "realtier/test_faults_deploy.py",  # 311',
        '    "realtier/test_pulumi_engine.py",  # 120',
        '    "realtier/test_karmada.py",  # 42',
        '    "realtier/test_kruise.py",  # 0',
    ]
    assert "Seconds: the run of " in text
    assert "an old run" not in text
    assert text.startswith('"""docstring"""')
    assert text.endswith(")\n\nTESTS: Final = 1\n")
    compile(text, "schedule.py", "exec")


def test_write_schedule_refuses_a_run_without_the_real_tier(tmp_path: Path) -> None:
    xml = tmp_path / "junit.xml"
    xml.write_text(JUNIT, encoding="utf-8")  # test_kruise skipped
    target = tmp_path / "schedule.py"
    target.write_text(SCHEDULE, encoding="utf-8")
    result = run("--xml", str(xml), "--write-schedule", str(target))
    assert result.returncode == 2
    assert "real-tier file(s) skipped" in result.stderr
    assert target.read_text(encoding="utf-8") == SCHEDULE
