"""Run the operator CLI with tracemalloc on; each SIGUSR1 writes a snapshot.

    python -X tracemalloc=8 -m benchmarks.memprobe OUT_DIR run --kubeconfig ...

Used by ``python -m benchmarks.soak --memory-profile OUT_DIR`` to find what grows: snapshot N
goes to ``OUT_DIR/snapshot-N.pickle`` together with ``OUT_DIR/types-N.txt``, the live objects
tracked by the garbage collector counted by type. The operator itself has no such hook; this
wrapper is the only way in, and it is never shipped in the image's entry point.
"""

from __future__ import annotations

import gc
import signal
import sys
import tracemalloc
from collections import Counter
from pathlib import Path
from types import FrameType

from endpointslice_operator.cli import main as operator_main


def install(out_dir: Path) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    taken = 0

    def dump(signum: int, frame: FrameType | None) -> None:
        nonlocal taken
        taken += 1
        gc.collect()
        tracemalloc.take_snapshot().dump(str(out_dir / f"snapshot-{taken}.pickle"))
        counts = Counter(type(obj).__qualname__ for obj in gc.get_objects())
        lines = (f"{count} {name}" for name, count in counts.most_common())
        (out_dir / f"types-{taken}.txt").write_text("\n".join(lines) + "\n")

    signal.signal(signal.SIGUSR1, dump)


def main(argv: list[str]) -> int:
    if not tracemalloc.is_tracing():
        tracemalloc.start(8)
    install(Path(argv[0]))
    return operator_main(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
