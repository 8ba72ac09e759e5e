"""zerograd-distributed: data-parallel training for zerograd on MPI (NCCL for CuPy arrays).

Start one process per worker with ``mpiexec -n 4 python train.py``; in the script:

```python
comm = create_communicator("auto")
broadcast_params(model, comm)
optimizer = DataParallelOptimizer(SGD(lr=0.1), comm).setup(model)
shard = scatter_dataset(train_set, comm, seed=0)
```

and train as usual: every ``optimizer.update()`` averages the gradients over the ranks.
"""

from __future__ import annotations

from importlib.metadata import version as _distribution_version

from . import checkpoint
from .communicator import OPS, Communicator
from .data import DatasetShard, evaluate, mean_over_ranks, scatter_dataset, shard_indices
from .failure import abort_on_error, install_excepthook
from .mpi import MpiCommunicator
from .nccl import NcclCommunicator, nccl_problem, nccl_unavailable_reason
from .optimizer import DataParallelOptimizer, broadcast_params, create_multi_node_optimizer
from .transports import create_communicator

__version__ = _distribution_version("zerograd-distributed")  # the repository's VERSION file

__all__ = [
    "OPS",
    "Communicator",
    "DataParallelOptimizer",
    "DatasetShard",
    "MpiCommunicator",
    "NcclCommunicator",
    "abort_on_error",
    "broadcast_params",
    "checkpoint",
    "create_communicator",
    "create_multi_node_optimizer",
    "evaluate",
    "install_excepthook",
    "mean_over_ranks",
    "nccl_problem",
    "nccl_unavailable_reason",
    "scatter_dataset",
    "shard_indices",
]
