# Sourced by each example's run.sh. Usage: run_example FOLDER PACKAGE [--mpi]
# Builds the example's binary and runs it with the machine file (`hosts`) and run
# configuration (`run.toml`) of examples/FOLDER: every rank as a thread of one process
# (--threads), or with --mpi one MPI job of a rank per machine-file line.
run_example() {
    local folder=examples/$1 package=$2 mode=${3:-}
    cd "$(dirname "${BASH_SOURCE[0]}")/../.."
    scripts/setup.sh
    . scripts/env.sh
    cargo build --quiet -p "$package"
    local bin=${CARGO_TARGET_DIR:-target}/debug/$package
    local args=(-m "$folder/hosts" -c "$folder/run.toml")
    case "$mode" in
        --mpi) exec mpirun --oversubscribe -np "$(grep -cv '^\s*\(#\|$\)' "$folder/hosts")" "$bin" "${args[@]}" ;;
        "") exec "$bin" --threads "${args[@]}" ;;
        *) echo "usage: $0 [--mpi]" >&2; return 2 ;;
    esac
}
