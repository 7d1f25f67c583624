# Sourced by the scripts: lets OpenMPI run as root (CI and these machines run as root) and
# keeps its shared-memory files out of the way.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No InfiniBand or other fabrics here: use shared memory and loopback TCP without probing.
export OMPI_MCA_btl="self,vader,tcp"
export OMPI_MCA_btl_tcp_if_include="lo"
export OMPI_MCA_oob_tcp_if_include="lo"
