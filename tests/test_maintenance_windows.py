"""No two workers of one dispatch set in AKS maintenance at once (checks/maintenance.py).

prod's workers 1-3 take team-a's jobs; each has its own staggered windows, so AKS never drains
two of them at the same time. A window they share, or two that overlap, is refused with its key
path and an example of the overlap; worker-4 (a set of its own) may share the manager's.
"""

from __future__ import annotations

import json
from datetime import date, datetime
from typing import Any

from checks.maintenance import spans
from checks.stack import parse_fleet
from config.errors import ConfigError, Issue
from config.loader import read_stack_file
from config.upgrades import MaintenanceWindow

Raw = dict[str, Any]


def prod() -> Raw:
    raw, _ = read_stack_file("prod")
    return json.loads(json.dumps(raw))  # its workers share sections through YAML anchors


def issues(raw: Raw) -> list[Issue]:
    try:
        _, warnings = parse_fleet(raw)
    except ConfigError as err:
        return err.issues
    return warnings


def maintenance(raw: Raw) -> list[str]:
    return [str(i) for i in issues(raw) if "maintenance" in i.message or "window" in i.message]


def test_prods_staggered_windows_pass() -> None:
    assert maintenance(prod()) == []


def test_a_window_the_workers_of_a_set_share_is_one_error_naming_them() -> None:
    raw = prod()
    for cluster in raw["clusters"][1:4]:
        del cluster["upgrades"]  # back to the fleet's windows
    found = [i for i in issues(raw) if "share this window" in i.message]
    assert [i.path for i in found] == ["upgrades.window", "upgrades.nodeOsWindow"]
    assert "workers worker-1, worker-2, worker-3 of the dispatch set of team-a" in found[0].message
    assert {i.severity for i in found} == {"error"}


def test_overlapping_windows_name_both_keys_and_an_example() -> None:
    raw = prod()
    raw["clusters"][2]["upgrades"]["window"]["startTime"] = "04:00"
    (found,) = [i for i in issues(raw) if "overlaps" in i.message]
    assert found.path == "clusters[2].upgrades.window"
    assert found.message.startswith("overlaps clusters[1].upgrades.window ('worker-1')")
    assert "e.g. Sat 04:00-08:00 UTC" in found.message


def test_the_utc_offset_is_counted() -> None:
    raw = prod()
    # 08:00 at UTC+02:00 is 06:00 UTC: inside worker-1's 00:00-08:00.
    raw["clusters"][2]["upgrades"]["window"]["utcOffset"] = "+02:00"
    (found,) = [i for i in issues(raw) if "overlaps" in i.message]
    assert "e.g. Sat 06:00-08:00 UTC" in found.message


def test_a_worker_in_a_set_of_its_own_may_share_a_window() -> None:
    raw = prod()
    raw["clusters"][4]["upgrades"] = raw["clusters"][1]["upgrades"]  # worker-4 like worker-1
    assert maintenance(raw) == []


def test_a_production_worker_maintained_at_any_time_is_a_warning() -> None:
    raw = prod()
    del raw["clusters"][3]["upgrades"]["nodeOsWindow"]
    (found,) = [i for i in issues(raw) if "at any time" in i.message]
    assert (found.path, found.severity) == ("clusters[3].upgrades", "warning")
    assert "upgrades.nodeOsChannel NodeImage with no window" in found.message
    raw["environment"] = "staging"
    assert not [i for i in issues(raw) if "at any time" in i.message]


def _window(**schedule: Any) -> MaintenanceWindow:
    return MaintenanceWindow.model_validate(
        {"schedule": schedule, "startTime": "22:00", "durationHours": 4}
    )


def test_spans_follow_each_schedule_kind() -> None:
    last = spans(_window(relativeMonthly={"dayOfWeek": "Sunday", "weekIndex": "Last"}))
    assert [s.date() for s, _ in last[:2]] == [date(2027, 1, 31), date(2027, 2, 28)]
    first = spans(_window(relativeMonthly={"dayOfWeek": "Monday", "weekIndex": "First"}))
    assert first[0][0].date() == date(2027, 1, 4)
    monthly = spans(_window(absoluteMonthly={"dayOfMonth": 15}))
    assert len(monthly) == 12
    daily = spans(_window(daily={"intervalDays": 1}))
    # 22:00 for 4 hours runs into the next day.
    assert daily[0] == (datetime(2027, 1, 4, 22, 0), datetime(2027, 1, 5, 2, 0))


def test_windows_that_only_touch_do_not_overlap() -> None:
    raw = prod()
    # worker-3's Saturday window ends at Sunday 00:00, when worker-1's node-OS window starts.
    assert raw["clusters"][3]["upgrades"]["window"]["startTime"] == "16:00"
    assert raw["clusters"][1]["upgrades"]["nodeOsWindow"]["startTime"] == "00:00"
    assert maintenance(raw) == []
