"""Rich tables of a `status` report and the text of a `why` answer (pure: dicts in, console out)."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fleetview.objects import human


def _table(title: str, *columns: str) -> Table:
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column, overflow="fold")
    return table


def _pct(value: float | None) -> str:
    return "" if value is None else f" ({value:.0f}%)"


def print_status(report: dict[str, Any], console: Console) -> None:
    t = report["timings"]
    dispatcher = t["dispatcher"] + (
        f" step {t['stepSize']}, {human(t['roundSeconds'])} rounds" if t["stepSize"] else ""
    )
    console.print(
        f"[bold]fleet status[/] at {report['generatedAt']}  "
        f"(grace {human(report['strandedAfterSeconds'])}; "
        f"{escape(dispatcher)} dispatcher, workerLostTimeout "
        f"{human(t['workerLostTimeoutSeconds'])}: {escape(t['source'])}"
        + (f"; {escape(t['note'])}" if t["note"] else "")
        + ")"
    )
    clusters = _table("Clusters", "cluster", "role", "answer", "node pools (ready/nodes)")
    for c in report["clusters"]:
        answer = f"{c['seconds']:.1f}s" if c["reachable"] else f"[red]{escape(c['error'])}[/]"
        pools = ", ".join(
            f"{p['pool']} {p['ready']}/{p['nodes']}"
            + (f" ({p['quarantined']} quarantined)" if p.get("quarantined") else "")
            for p in c["nodePools"]
        )
        clusters.add_row(c["name"], c["role"], answer, pools or "-")
    console.print(clusters)

    queues = _table(
        "ClusterQueues",
        "cluster",
        "queue",
        "active",
        "pending",
        "reserving",
        "admitted",
        "flavor",
        "resource",
        "used / nominal",
    )
    for c in report["clusters"]:
        for q in c["clusterQueues"]:
            head = [
                c["name"],
                q["name"],
                "yes" if q["active"] else f"[red]no[/] ({escape(q['reason'])})",
                str(q["pending"]),
                str(q["reserving"]),
                str(q["admitted"]),
            ]
            for i, u in enumerate(q["usage"] or [{}]):
                cells = head if i == 0 else [""] * len(head)
                usage = f"{u['used']} / {u['nominal']}{_pct(u['usedPercent'])}" if u else "no quota"
                queues.add_row(*cells, u.get("flavor", "-"), u.get("resource", "-"), usage)
    console.print(queues)

    for c in report["clusters"]:
        if c["multiKueueClusters"]:
            mkc = _table(
                f"MultiKueueClusters on {c['name']}", "worker", "active", "since", "reason: message"
            )
            for m in c["multiKueueClusters"]:
                mkc.add_row(
                    m["name"],
                    "yes" if m["active"] else "[red]no[/]",
                    human(m["sinceSeconds"]),
                    escape(f"{m['reason']}: {m['message']}".rstrip(": ")),
                )
            console.print(mkc)
        if c["dispatchSets"]:
            ds = _table(
                f"Dispatch sets on {c['name']}",
                "set (workers)",
                "workload",
                "state",
                "worker",
                "check",
            )
            for d in c["dispatchSets"]:
                label = f"{d['config']} ({', '.join(d['workers'])})"
                if not d["workloads"]:
                    ds.add_row(label, "-", "", "", "")
                for i, w in enumerate(d["workloads"]):
                    where = w["worker"] or (
                        f"nominated {', '.join(w['nominated'])}" if w["nominated"] else "-"
                    )
                    check = f"{w['checkState'] or '-'}" + (
                        f": {w['checkMessage']}" if w["checkMessage"] else ""
                    )
                    ds.add_row(
                        label if i == 0 else "",
                        f"{w['namespace']}/{w['name']}",
                        w["state"] or w["phase"],
                        where,
                        escape(check),
                    )
            console.print(ds)

    prs = _table(
        "ProvisioningRequests", "cluster", "request", "workload", "state", "age", "reason: message"
    )
    rows = 0
    for c in report["clusters"]:
        for p in c["provisioningRequests"]:
            rows += 1
            prs.add_row(
                c["name"],
                f"{p['namespace']}/{p['name']}",
                p["workload"] or "-",
                p["state"],
                human(p["ageSeconds"]),
                escape(f"{p['reason']}: {p['message']}".strip(": ")),
            )
    if rows:
        console.print(prs)

    if report["warnings"]:
        warn = _table("Warnings", "kind", "cluster", "object", "message")
        for w in report["warnings"]:
            warn.add_row(f"[yellow]{w['kind']}[/]", w["cluster"], w["object"], escape(w["message"]))
        console.print(warn)
    else:
        console.print("[green]no warnings[/]")


def print_why(answer: dict[str, Any], console: Console) -> None:
    head = f"[bold]{escape(answer['job'])}[/]"
    if answer["workload"]:
        head += f": Workload {escape(answer['workload'])} on {answer['cluster']}, {answer['state']}"
        if answer["worker"]:
            head += f", on worker {answer['worker']}"
    console.print(head)
    facts = _table("What each cluster says", "cluster", "object", "says")
    for f in answer["facts"]:
        facts.add_row(f["cluster"], escape(f["object"]), escape(f["says"]))
    if answer["facts"]:
        console.print(facts)
    console.print(f"[bold]Why:[/] {escape(answer['verdict'])}")
    console.print(f"[bold]Next:[/] {escape(answer['next'])}")
