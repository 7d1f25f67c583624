"""Plans of a federation on this machine, for the scale benchmarks (issue 43): a main cluster
under mpirun (its master, WORKERS workers and a CM rank per external cluster) and external
clusters of threads (`launcher = "threads"`: a sub-master, a CM and WORKERS workers in one
process each), the synthetic application's sleeping tasks (no CPU quota: the two cores hold
many clusters), each WAN with its own one-way delay (5 to 150 ms) and rate (2 to 20 MB/s), as
the test `sixteen_clusters_hold_their_links` has them. Used as a module:

    import federation; print(federation.plan(clusters=16, tasks=600, task_seconds=0.1))
"""


def cluster_table(name, head_role, workers, extra):
    """One `[[cluster]]`: its head (`head_role`), a CM and `workers` workers of perf 10."""
    machines = [
        f'  {{ host = "{name}-head", role = "{head_role}" }},',
        f'  {{ host = "{name}-cm", role = "cm" }},',
    ]
    machines += [
        f'  {{ host = "{name}-{w}", role = "worker", perf = 10.0 }},'
        for w in range(1, workers + 1)
    ]
    return (
        f'[[cluster]]\nname = "{name}"\nlan_bytes_per_s = 1e9\n{extra}\nmachines = [\n'
        + "\n".join(machines)
        + "\n]\n"
    )


def plan(clusters, tasks, task_seconds, workers=2, statistics_interval=0.0):
    """The plan's text: `clusters` clusters in all, `tasks` tasks of `task_seconds` seconds
    on a worker (perf 10 at speed 1), progress lines every `statistics_interval` seconds
    (0: none)."""
    text = (
        f'[application]\nname = "synthetic"\ntasks = {tasks}\noper = 1.0\n'
        "task_bytes = 100\nresult_bytes = 100\n"
        '[launch]\nbinary = "hmw-synthetic"\nreference_perf = 10.0\n'
        f"[launch.application]\ntasks = {tasks}\ntask_seconds = {task_seconds}\n"
        f"[run]\nstatistics_interval = {statistics_interval}\nwait_for_links = true\n"
        "[launch.cm]\nlost_after_s = 120\nsend_memory = 1048576\nrecv_memory = 1048576\n"
        "max_memory = 41943040\n"
    )
    text += cluster_table("main", "master", workers, "main = true")
    for k in range(1, clusters):
        delay_ms = 5 + (145 * (k - 1)) // max(clusters - 2, 1)
        rate = 2e6 * (1 + (k * 7) % 10)
        text += cluster_table(
            f"c{k:02}",
            "submaster",
            workers,
            f"wan_in_bytes_per_s = {rate}\nwan_out_bytes_per_s = {rate}",
        )
        text += f'[cluster.launch]\nlauncher = "threads"\nwan_delay_ms = {delay_ms}\n'
    return text
