"""Plans of a federation on this machine, for the scale benchmarks (issue 43): a main cluster
under mpirun (its master, WORKERS workers and a CM rank per external cluster), the first
`mpi_clusters - 1` external clusters under mpirun too (`launcher = "local"`: a sub-master, a
CM and WORKERS workers, a process each), the others clusters of threads (`launcher =
"threads"`: the same ranks in one process), the synthetic application's sleeping tasks (no
CPU quota: the two cores hold many clusters), each WAN with its own one-way delay (5 to 150
ms) and rate (2 to 20 MB/s), as the test `sixteen_clusters_hold_their_links` has them. Used
as a module:

    import federation; print(federation.plan(clusters=16, tasks=600, task_seconds=0.1))

The same clusters as a tree (`regions=R, tree=True`): R regions of `clusters / R` clusters each, the
first region the main cluster's; every other region's first cluster hangs from the main
cluster over its own WAN and the region's other clusters from it over a regional WAN
(`regional_delay_ms`, their own rates); the main region's other clusters hang from the main
cluster as in the star. A region's uplink (`uplink_bytes_per_s`) then carries its whole
region's traffic.
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


def plan(
    clusters,
    tasks,
    task_seconds,
    workers=2,
    statistics_interval=0.0,
    task_bytes=100,
    regions=0,
    tree=False,
    regional_delay_ms=5,
    uplink_bytes_per_s=None,
    emulate_rates=False,
    mpi_clusters=1,
    links_in_one_process=False,
):
    """The plan's text: `clusters` clusters in all, `tasks` tasks of `task_seconds` seconds
    on a worker (perf 10 at speed 1, `oper` 10 times the seconds, so that the model's task
    time is the synthetic one's) and `task_bytes` bytes each way, progress lines every
    `statistics_interval` seconds (0: none); a star, or with `tree` a tree of `regions`
    regions. With
    `uplink_bytes_per_s`, the link of each region's first cluster to the main cluster has
    that rate, in both shapes. With `emulate_rates`, each WAN's emulator holds it to its
    rates (otherwise it adds the delay alone). The main cluster and the next `mpi_clusters - 1`
    run under mpirun, the others as clusters of threads. With `links_in_one_process`, the CMs
    of each cluster's links share one process (`[cluster.launch] links_in_one_process`)."""
    shared = "links_in_one_process = true\n" if links_in_one_process else ""
    text = (
        f'[application]\nname = "synthetic"\ntasks = {tasks}\noper = {10 * task_seconds}\n'
        f"task_bytes = {task_bytes}\nresult_bytes = {task_bytes}\n"
        '[launch]\nbinary = "hmw-synthetic"\nreference_perf = 10.0\n'
        f"[launch.application]\ntasks = {tasks}\ntask_seconds = {task_seconds}\n"
        f"task_bytes = {task_bytes}\nresult_bytes = {task_bytes}\n"
        f"[run]\nstatistics_interval = {statistics_interval}\nwait_for_links = true\n"
        "[launch.cm]\nlost_after_s = 120\nsend_memory = 1048576\nrecv_memory = 1048576\n"
        "max_memory = 41943040\n"
    )
    text += cluster_table("main", "master", workers, "main = true")
    text += f"[cluster.launch]\n{shared}"
    size = clusters // regions if regions else clusters
    for k in range(1, clusters):
        delay_ms = 5 + (145 * (k - 1)) // max(clusters - 2, 1)
        rate = 2e6 * (1 + (k * 7) % 10)
        head = k - k % size
        if uplink_bytes_per_s and regions and head == k:
            rate = uplink_bytes_per_s
        parent = ""
        if tree and head != 0 and head != k:
            parent = f'parent = "c{head:02}"\n'
            delay_ms = regional_delay_ms
        text += cluster_table(
            f"c{k:02}",
            "submaster",
            workers,
            f"wan_in_bytes_per_s = {rate}\nwan_out_bytes_per_s = {rate}",
        )
        launcher = "local" if k < mpi_clusters else "threads"
        text += (
            f'[cluster.launch]\nlauncher = "{launcher}"\nwan_delay_ms = {delay_ms}\n{parent}{shared}'
        )
        if emulate_rates:
            text += "emulate_rates = true\n"
    return text
