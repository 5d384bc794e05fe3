"""``python -m storm_zmq.runtime.worker_process FD``: a local-mode worker process
(runtime/launch.py starts it). FD is its end of the runner's pipe, on which its spec
comes first; then it is `worker_main`."""

from __future__ import annotations

import pickle
import sys
from multiprocessing.connection import Connection

from storm_zmq.runtime.worker import worker_main


def main(argv: list[str]) -> None:
    pipe = Connection(int(argv[1]))
    worker_main(pickle.loads(pipe.recv_bytes()), pipe)


if __name__ == "__main__":
    main(sys.argv)
