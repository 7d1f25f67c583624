# Sourced by the scripts: lets OpenMPI run as root (CI and these machines run as root) and
# keeps its shared-memory files out of the way.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No InfiniBand or other fabrics here: use shared memory and loopback TCP without probing.
export OMPI_MCA_btl="self,vader,tcp"
export OMPI_MCA_btl_tcp_if_include="lo"
export OMPI_MCA_oob_tcp_if_include="lo"

# One build per profile for every script. Cargo unifies features over the packages and targets
# of each invocation, so two invocations that select different ones (the binaries alone, or
# with the tests, whose dev-dependencies turn on more features of shared crates) compile much
# of the tree twice: in CI that was mpi-sys with its bindgen, plotters and hmw itself, twice.
build_debug() { cargo build --quiet --workspace --bins --examples --tests "$@"; }
# The release binaries every script runs: all but the benchmarks' own tools, which their
# scripts build with the profile they measure (`scripts/bench-*.sh`).
build_release() {
    cargo build --quiet --release --workspace --bins \
        --exclude hmw-dispatch --exclude hmw-link-bench "$@"
}
