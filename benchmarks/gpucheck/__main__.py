"""``python -m benchmarks.gpucheck``: the GPU check's command line (:func:`benchmarks.gpucheck.run.main`)."""

from benchmarks.gpucheck.run import main

if __name__ == "__main__":
    raise SystemExit(main())
