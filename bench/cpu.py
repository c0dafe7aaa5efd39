"""CPU accounting from /proc for the benches: the seconds of CPU a process used, a server's
worker processes, the PostgreSQL backends of the bench's database, the machine's busy share; and
a sample of all of them whose difference gives the cores each used (`bench.load`,
`bench.answer_cost`)."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")


def proc_cpu(pid: int) -> float:
    """Seconds of CPU (user + system, all threads) used by one process so far."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (a server's workers)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1]) == pid:
                    out.append(int(entry.name))
            except (OSError, IndexError, ValueError):
                continue
    return out


# PostgreSQL serves other databases on this machine too: count the backends of the bench's
# database and the shared processes that write its WAL, not everyone's.
PG_PIDS_SQL = """
SELECT pid FROM pg_stat_activity
WHERE datname = current_database()
   OR backend_type IN ('walwriter', 'checkpointer', 'background writer')
"""


def postgres_pids(pg) -> list[int]:
    return [row[0] for row in pg.execute(PG_PIDS_SQL).fetchall()]


def postgres_cpu(pg) -> dict[int, float]:
    """Seconds of CPU used so far by each PostgreSQL process counted for the bench's database
    (`pg`, a psycopg connection to it)."""
    return {pid: proc_cpu(pid) for pid in postgres_pids(pg)}


def machine_busy() -> tuple[float, float]:
    """(busy seconds, total seconds) of all cores since boot, from /proc/stat."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]
    return (sum(values[:8]) - idle) / TICK, sum(values[:8]) / TICK


@dataclass
class CpuSample:
    wall: float
    generator: float
    server: dict[int, float]
    postgres: dict[int, float]
    busy: float
    total: float


def cpu_sample(master_pid: int, pg) -> CpuSample:
    workers = children(master_pid) + [master_pid]
    busy, total = machine_busy()
    return CpuSample(
        wall=time.perf_counter(),
        generator=time.process_time(),
        server={pid: proc_cpu(pid) for pid in workers},
        postgres=postgres_cpu(pg),
        busy=busy,
        total=total,
    )


def cpu_share(a: CpuSample, b: CpuSample) -> dict[str, float]:
    """CPU used between two samples, in cores (1.0 = one core fully busy)."""
    wall = b.wall - a.wall

    def diff(x: dict[int, float], y: dict[int, float]) -> float:
        return sum(y[pid] - x.get(pid, 0.0) for pid in y)

    cores = os.cpu_count() or 1
    machine = (b.busy - a.busy) / (b.total - a.total) * cores if b.total > a.total else 0.0
    out = {
        "generator": (b.generator - a.generator) / wall,
        "gunicorn": diff(a.server, b.server) / wall,
        "postgres": diff(a.postgres, b.postgres) / wall,
        "machine": machine,
    }
    out["other"] = max(0.0, machine - out["generator"] - out["gunicorn"] - out["postgres"])
    return out
