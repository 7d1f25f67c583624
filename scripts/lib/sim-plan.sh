# The simulator benchmarks' plans; sourced (`. scripts/lib/sim-plan.sh`) from the repository's
# root.

# A plan on standard output: TASKS tasks of OPER basic operations (a task of 1 takes 10 ms on
# a worker of perf 100; default 1), 64-byte tasks and results, on CLUSTERS clusters of WORKERS
# workers each: the main one (its master, a CM when there are others) and CLUSTERS - 1 behind
# WANs of 100 MB/s each way and 20 ms round trip, a sub-master, a CM and the workers each,
# NT tasks per inter-cluster message and NR results per inter-cluster result (default 1). The
# workers of a cluster are one entry, a host range.
#   sim_plan TASKS CLUSTERS WORKERS [OPER [NT [NR]]]
sim_plan() {
    local tasks=$1 clusters=$2 workers=$3 oper=${4:-1.0} nt=${5:-1} nr=${6:-1} c
    printf '[application]\nname = "bench"\ntasks = %d\noper = %s\ntask_bytes = 64\nresult_bytes = 64\n\n' \
        "$tasks" "$oper"
    printf '[run]\nstatistics_interval = 0\nworker_buffers = 2\nreassign_last_task = true\nwait_for_links = true\n\n'
    for c in $(seq "$clusters"); do
        printf '[[cluster]]\nname = "c%d"\nlan_bytes_per_s = 1.0e9\n' "$c"
        if [ "$c" = 1 ]; then
            printf 'main = true\nmachines = [\n  { host = "c1-head", role = "master" },\n'
            if [ "$clusters" -gt 1 ]; then printf '  { host = "c1-cm", role = "cm" },\n'; fi
        else
            printf 'wan_in_bytes_per_s = 1.0e8\nwan_out_bytes_per_s = 1.0e8\nwan_rtt_s = 0.02\n'
            printf 'tasks_per_inter_task = %d\nresults_per_inter_result = %d\n' "$nt" "$nr"
            printf 'machines = [\n  { host = "c%d-head", role = "submaster" },\n  { host = "c%d-cm", role = "cm" },\n' \
                "$c" "$c"
        fi
        printf '  { host = "c%d-[1-%d]", role = "worker", perf = 100.0 },\n]\n\n' "$c" "$workers"
    done
}
